//! `tfcluster connect --probe`: run one tiny op on every task, and with device filters check
//! each task's view by real cross-task inputs: a tensor placed on task S is used by an op on
//! task C, which TensorFlow's worker allows only if C was given S's device. The views observed
//! this way are compared with those the filter rule predicts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use cluster_spec::__private::error_chain::Chain;
use remote_connect::tonic::Code;
use remote_connect::{Context, DeviceHandle, Error, Op, RemoteTensor, TaskId, Tensor};
use serde_json::json;

/// What one task did with the probe op.
pub(crate) enum Outcome {
    /// It ran the op; round trip in milliseconds.
    Computes(f64),
    /// It serves contexts but runs no ops (a tfcluster task server answers UNIMPLEMENTED).
    CannotCompute,
    /// It failed otherwise.
    Failed(String),
}

/// Whether a consumer task could use a tensor living on a source task.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    Yes,
    /// TensorFlow's worker answered `unknown device`.
    No,
}

pub(crate) struct Probe {
    /// Every remote task's outcome, in the context's task order.
    pub(crate) tasks: Vec<(TaskId, Outcome)>,
    /// (consumer, source) → what was observed, for tasks that compute.
    pub(crate) observed: BTreeMap<(TaskId, TaskId), Result<Seen, String>>,
    /// (consumer, source) → what the device filters predict.
    pub(crate) predicted: BTreeMap<(TaskId, TaskId), Seen>,
}

/// The device every probe op runs on: the task's first device, from the context's listing
/// (read once for all tasks).
fn first_device(ctx: &Context, devices: &[String], task: &TaskId) -> Option<DeviceHandle> {
    let prefix = format!("{task}/device:");
    let name = devices.iter().find(|d| d.starts_with(&prefix))?;
    ctx.device(name).ok()
}

pub(crate) async fn run(ctx: &Context, cross: bool) -> Probe {
    let tasks: Vec<TaskId> = ctx.remote_tasks().into_iter().map(|(t, _)| t).collect();
    let devices: Vec<String> = ctx
        .list_logical_devices()
        .into_iter()
        .map(|d| d.name)
        .collect();
    let mut outcomes = Vec::new();
    // Each computing task's device and a tensor placed on it.
    let mut placed: Vec<(TaskId, DeviceHandle, RemoteTensor)> = Vec::new();
    for task in &tasks {
        let Some(device) = first_device(ctx, &devices, task) else {
            outcomes.push((task.clone(), Outcome::Failed("no device".into())));
            continue;
        };
        let start = Instant::now();
        let op = Op::new("Identity").input(Tensor::scalar(1i32));
        let outcome = match ctx.enqueue(&device, op).await {
            Ok(mut kept) if kept.len() == 1 => {
                let ms = start.elapsed().as_secs_f64() * 1000.0;
                placed.push((task.clone(), device, kept.remove(0)));
                Outcome::Computes(ms)
            }
            Ok(kept) => Outcome::Failed(format!("Identity returned {} outputs", kept.len())),
            Err(Error::Op(f)) if f.status().map(|s| s.code()) == Some(Code::Unimplemented) => {
                Outcome::CannotCompute
            }
            Err(e) => Outcome::Failed(Chain(&e).to_string()),
        };
        outcomes.push((task.clone(), outcome));
    }
    let mut observed = BTreeMap::new();
    let mut predicted = BTreeMap::new();
    if cross {
        for (consumer, device, _) in &placed {
            let visible = ctx.visible_devices(consumer).unwrap_or_default();
            for (source, source_device, tensor) in &placed {
                if source == consumer {
                    continue;
                }
                let key = (consumer.clone(), source.clone());
                let sees = visible.iter().any(|d| d == source_device.name());
                predicted.insert(key.clone(), if sees { Seen::Yes } else { Seen::No });
                let op = Op::new("Identity").input(tensor);
                let seen = match ctx.execute(device, op).await {
                    Ok(_) => Ok(Seen::Yes),
                    Err(Error::Op(f))
                        if f.status()
                            .is_some_and(|s| s.message().ends_with("unknown device.")) =>
                    {
                        Ok(Seen::No)
                    }
                    Err(e) => Err(Chain(&e).to_string()),
                };
                observed.insert(key, seen);
            }
        }
    }
    Probe {
        tasks: outcomes,
        observed,
        predicted,
    }
}

impl Probe {
    /// Every pair where what was observed differs from the prediction, or could not be told.
    pub(crate) fn differences(&self) -> Vec<String> {
        self.observed
            .iter()
            .filter_map(|((consumer, source), seen)| {
                let predicted = self.predicted.get(&(consumer.clone(), source.clone()))?;
                match seen {
                    Ok(s) if s == predicted => None,
                    Ok(s) => Some(format!(
                        "{consumer} {} {source}'s device, but the filters say it {}",
                        if *s == Seen::Yes {
                            "uses"
                        } else {
                            "cannot use"
                        },
                        if *predicted == Seen::Yes {
                            "may"
                        } else {
                            "may not"
                        }
                    )),
                    Err(e) => Some(format!("{consumer} using {source}'s device: {e}")),
                }
            })
            .collect()
    }

    pub(crate) fn table(&self) -> String {
        let mut out = String::from("\nprobe (one op per task):\n");
        for (task, outcome) in &self.tasks {
            let text = match outcome {
                Outcome::Computes(ms) => format!("computes ({ms:.1} ms)"),
                Outcome::CannotCompute => "cannot compute (serves contexts only)".into(),
                Outcome::Failed(e) => format!("failed: {e}"),
            };
            let _ = writeln!(out, "  {task}  {text}");
        }
        if self.observed.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "\nobserved by cross-task inputs (x: uses the device, .: unknown device):"
        );
        for ((consumer, source), seen) in &self.observed {
            let mark = match seen {
                Ok(Seen::Yes) => "x",
                Ok(Seen::No) => ".",
                Err(_) => "?",
            };
            let predicted = match self.predicted.get(&(consumer.clone(), source.clone())) {
                Some(Seen::Yes) => "x",
                _ => ".",
            };
            let flag = if mark == predicted {
                ""
            } else {
                "  <- differs from the filters"
            };
            let _ = writeln!(
                out,
                "  {consumer} -> {source}: {mark} (predicted {predicted}){flag}"
            );
        }
        out
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        let tasks: Vec<_> = self
            .tasks
            .iter()
            .map(|(task, outcome)| match outcome {
                Outcome::Computes(ms) => {
                    json!({"task": task.to_string(), "computes": true, "ms": ms})
                }
                Outcome::CannotCompute => json!({"task": task.to_string(), "computes": false}),
                Outcome::Failed(e) => json!({"task": task.to_string(), "error": e}),
            })
            .collect();
        let observed: Vec<_> = self
            .observed
            .iter()
            .map(|((consumer, source), seen)| {
                let predicted = self.predicted.get(&(consumer.clone(), source.clone()));
                json!({
                    "task": consumer.to_string(),
                    "source": source.to_string(),
                    "observed": match seen { Ok(s) => json!(*s == Seen::Yes), Err(e) => json!(e) },
                    "predicted": predicted.map(|p| *p == Seen::Yes),
                })
            })
            .collect();
        json!({"tasks": tasks, "views": observed, "differences": self.differences()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_unlike_the_filters_is_a_difference() {
        let w0 = TaskId::new("worker", 0);
        let w1 = TaskId::new("worker", 1);
        let probe = Probe {
            tasks: Vec::new(),
            observed: [
                ((w0.clone(), w1.clone()), Ok(Seen::Yes)),
                ((w1.clone(), w0.clone()), Ok(Seen::No)),
            ]
            .into(),
            predicted: [((w0.clone(), w1.clone()), Seen::No), ((w1, w0), Seen::No)].into(),
        };
        assert_eq!(
            probe.differences(),
            [
                "/job:worker/replica:0/task:0 uses /job:worker/replica:0/task:1's device, but \
                 the filters say it may not"
            ]
        );
        assert!(probe.table().contains("<- differs from the filters"));
    }
}
