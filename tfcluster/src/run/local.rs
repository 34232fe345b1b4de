//! `run --local`: a whole cluster as child processes of this one, and the job's outcome
//! decided as TensorFlow users expect it.
//!
//! The job succeeds when its leader (the chief, or worker 0 without one) exits 0 and no other
//! task failed. After the leader's success the others get the grace period to exit on their
//! own (MultiWorkerMirroredStrategy's workers do) and are then stopped, which is no failure
//! (ParameterServerStrategy's workers and parameter servers serve until stopped). The first
//! task to fail, before any stop, fails the job: the others are stopped with the failure
//! grace (none by default: they are killed at once, as nothing they hold can be saved
//! without the failed peer) and the message names it. A stop is SIGTERM (or the
//! SIGINT/SIGTERM we received, passed on), then SIGKILL after the grace period, to each
//! task's whole process group. With a watchdog, a task that shows no progress for its
//! period is hung ([`launcher::supervise::Watchdog`]): it is asked for its stack and killed,
//! and fails the job as any failure, the error naming it as hung with the end of its stderr
//! (the stack). The processes themselves are
//! [`launcher::supervise`]'s, as the `--rdzv` agent's are; the decision is made here.

use anyhow::anyhow;
use cluster_resolver::gpus;
use cluster_resolver::{Env, tf_config_for};
use cluster_spec::{ClusterSpec, TaskId};
use launcher::supervise::{Exit, Signal, Supervisor, TaskLogs, TaskSpec};
use launcher::{TaskEnd, TaskEnv, TaskGpus, TaskMetrics};
use metrics_endpoint::Health;
use metrics_endpoint::prometheus_client::registry::Registry;
use tokio::time::{Instant, sleep_until};

use crate::args::metrics::MetricsArgs;
use crate::args::stops::StopArgs;
use crate::args::watchdog::WatchdogArgs;
use crate::failure::Failure;
use crate::run::local_jobs::LocalJobs;
use crate::stop_signal::{Stop, stopped};

/// The job name of `run --local`'s task logs (`--log-dir DIR` puts them in `DIR/local/round-1`).
const LOCAL: &str = "local";

/// Every task of `jobs` with its environment: its TF_CONFIG; its share of this host's GPUs
/// as CUDA_VISIBLE_DEVICES, split as `run --rdzv` splits them among a host's tasks
/// ([`TaskGpus`], in task order; left as ours on a host without GPUs); and Python's output
/// unbuffered (unless the caller chose otherwise) so its lines come through the pipes as
/// they are printed, not when a stopped server's buffer would have been flushed.
pub(crate) async fn task_envs(
    jobs: &LocalJobs,
    spec: &ClusterSpec,
    gpus_per_task: Option<launcher::GpusPerTask>,
) -> Result<Vec<(TaskId, Vec<(String, String)>)>, Failure> {
    let tasks = jobs.tasks();
    let count = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
    let gpus = TaskGpus::find(&Env::process(), count, gpus_per_task, gpus::host()).await?;
    tasks
        .into_iter()
        .zip(0u32..)
        .map(|(task, i)| {
            let tf_config = tf_config_for(spec, &task.job, task.task, None)?;
            Ok((
                task,
                TaskEnv::new(tf_config).with_gpus(&gpus, i).into_vars(),
            ))
        })
        .collect()
}

/// Runs `command` once per task of `jobs` and waits for the job's outcome.
pub(crate) async fn run(
    jobs: &LocalJobs,
    command: &[String],
    stops: StopArgs,
    gpus_per_task: Option<launcher::GpusPerTask>,
    watchdog: WatchdogArgs,
    logs: Option<TaskLogs>,
    metrics: MetricsArgs,
) -> Result<(), Failure> {
    let StopArgs {
        grace,
        failure_grace,
    } = stops;
    let (spec, reserved) = jobs.cluster().map_err(anyhow::Error::msg)?;
    let (tasks, envs): (Vec<TaskId>, Vec<_>) = task_envs(jobs, &spec, gpus_per_task)
        .await?
        .into_iter()
        .unzip();
    let leader = jobs.leader();
    // Caught before the first task starts, so a Ctrl-C during the start stops what started.
    let mut signals = Stop::install();
    // Healthy while the tasks run: the port serves until this function returns.
    let task_metrics = TaskMetrics::default();
    let mut registry = Registry::default();
    task_metrics.register(&mut registry);
    let _serving = metrics.serve(registry, Health::new()).await?;
    let mut job = Supervisor::new()
        .with_metrics(task_metrics)
        .with_watchdog(watchdog.watchdog)
        .with_watchdog_start(watchdog.watchdog_start);
    let watchdog = job.watchdog();
    // The tasks bind their ports themselves, from now.
    drop(reserved);
    if let Some(logs) = &logs {
        logs.start_round(LOCAL, 1).await;
    }
    let host = launcher::hostname();
    // The supervisor's indices are these tasks' positions.
    for (task, env) in tasks.iter().zip(envs) {
        let log = logs.as_ref().map(|logs| {
            logs.task(LOCAL, 1, &task.job, task.task)
                .with_header(format!("# tfcluster: {task} on {host}, round 1"))
        });
        let started = job
            .start(TaskSpec {
                name: task.short_name(),
                argv: command.to_vec(),
                env,
                log,
            })
            .map_err(Failure::from);
        if let Err(failure) = started {
            job.signal(Signal::SIGKILL);
            return Err(failure);
        }
    }

    let mut ending: Option<Ending> = None;
    // Set once the tasks were told to stop: their exits from then on are the stop's doing.
    let mut stopping = false;
    let mut deadline: Option<Instant> = None;
    while job.running() > 0 {
        tokio::select! {
            Some((index, status)) = job.next_exit() => {
                let failed = !matches!(&status, Ok(status) if status.success());
                if stopping {
                    continue;
                }
                if failed {
                    tracing::info!(task = %tasks[index].short_name(), ?failure_grace, "a task failed: stopping the others");
                    ending = Some(Ending::Failed { index, status });
                    // With no failure grace, the others are killed at once.
                    if !failure_grace.is_zero() {
                        job.signal(Signal::SIGTERM);
                    }
                    stopping = true;
                    deadline = Some(Instant::now() + failure_grace);
                } else if ending.is_none() && tasks[index] == leader {
                    tracing::info!(task = %leader.short_name(), ?grace, "the leader succeeded: the others have the grace period to exit");
                    ending = Some(Ending::Succeeded);
                    deadline = Some(Instant::now() + grace);
                }
            }
            () = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if stopping {
                    tracing::warn!(tasks = %job.running_names(), "killing what is still running");
                    job.signal(Signal::SIGKILL);
                    deadline = None;
                } else {
                    tracing::info!(tasks = %job.running_names(), "stopping the tasks that still serve");
                    job.signal(Signal::SIGTERM);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
            // Its exit, soon after, fails the job as hung.
            index = watchdog.hung(), if !stopping => job.kill_hung(index),
            signal = signals.next() => {
                if stopping {
                    // A signal during a stop: the user will not wait for the grace period.
                    job.signal(Signal::SIGKILL);
                    deadline = None;
                } else {
                    ending = Some(Ending::Stopped(signal));
                    job.signal(signal);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
        }
    }
    // A hung task's stack is the end of its stderr, read before the supervisor lets go.
    let hung = match &ending {
        Some(Ending::Failed { index, status }) => match job.status(*index, status) {
            hung @ TaskEnd::Hung { .. } => Some((hung, job.stderr_tail(*index, grace).await)),
            _ => None,
        },
        _ => None,
    };
    // What the tasks started and left in their groups goes too; then the last lines.
    job.finish(grace).await;
    match ending {
        Some(Ending::Succeeded) => Ok(()),
        Some(Ending::Failed { index, status }) => {
            let task = &tasks[index];
            let (name, device) = (task.short_name(), task.device_prefix());
            let log = match &logs {
                Some(logs) => format!(
                    "; its log: {}",
                    logs.task(LOCAL, 1, &task.job, task.task).err().display()
                ),
                None => String::new(),
            };
            if let Some((hung, stack)) = hung {
                return Err(anyhow!(
                    "task {name} ({device}) {hung}; the other tasks were stopped{log}; its \
                     stderr ended with:\n{}",
                    stack.trim_end()
                )
                .into());
            }
            let how = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("could not be waited for ({e})"),
            };
            Err(
                anyhow!("task {name} ({device}) failed: {how}; the other tasks were stopped{log}")
                    .into(),
            )
        }
        Some(Ending::Stopped(signal)) => Err(stopped(signal, "every task")),
        // Not reached: the loop ends once every task exited, and the leader's exit (or a stop
        // before it) sets the ending.
        None => Err(anyhow!("{} ended undecided", leader.short_name()).into()),
    }
}

/// How the job ended.
enum Ending {
    Succeeded,
    Failed { index: usize, status: Exit },
    Stopped(Signal),
}
