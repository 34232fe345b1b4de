//! Every pod of a manifest resolved with only its environment: `tfcluster resolve --from
//! k8s-indexed` must give each the cluster written down here for the manifest and each its
//! own task, and TensorFlow 2.21's `TFConfigClusterResolver`, given the TF_CONFIG of each
//! (`--format tf-config`), must read the same cluster and task.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::pods::{NAMESPACE, Pod};
use crate::slurm::deadline;
use crate::tally::Suite;
use crate::venv;

/// One resolve is milliseconds; importing TensorFlow, seconds.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The programs the checks run.
pub(super) struct Tools<'a> {
    pub(super) tfcluster: &'a Path,
    pub(super) python: &'a Path,
}

/// What a manifest means: its cluster, and each pod's task by host name.
pub(super) struct Expected {
    cluster: Value,
    tasks: Vec<(String, String, u64)>,
}

/// `mwms-indexed-job.yaml`: three workers, `train-<i>` worker `i`.
pub(super) fn expected_mwms() -> Expected {
    let host = |i: u64| format!("train-{i}.train.{NAMESPACE}.svc:2222");
    Expected {
        cluster: json!({"worker": [host(0), host(1), host(2)]}),
        tasks: (0..3)
            .map(|i| (format!("train-{i}"), "worker".to_owned(), i))
            .collect(),
    }
}

/// `ps-jobset.yaml`: chief 1, ps 2, worker 2, `ps-<job>-<j>-0` task `j` of `<job>`.
pub(super) fn expected_ps() -> Expected {
    let host = |job: &str, j: u64| format!("ps-{job}-{j}-0.ps.{NAMESPACE}.svc:2222");
    let jobs = [("chief", 1), ("ps", 2), ("worker", 2)];
    Expected {
        cluster: json!({
            "chief": [host("chief", 0)],
            "ps": [host("ps", 0), host("ps", 1)],
            "worker": [host("worker", 0), host("worker", 1)],
        }),
        tasks: jobs
            .iter()
            .flat_map(|&(job, n)| {
                (0..n).map(move |j| (format!("ps-{job}-{j}-0"), job.to_owned(), j))
            })
            .collect(),
    }
}

/// Each pod's TensorFlow view, one JSON object a line, from the TF_CONFIGs one a line in the
/// file named by its argument.
const TENSORFLOW: &str = r#"
import json, os, sys
import tensorflow as tf

for line in open(sys.argv[1]):
    os.environ["TF_CONFIG"] = line
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    print(json.dumps({"cluster": r.cluster_spec().as_dict(), "task_type": r.task_type,
                      "task_id": r.task_id}))
"#;

/// Records two checks for `manifest`: every pod resolves to the expected cluster and its own
/// task; TensorFlow reads the same from each pod's TF_CONFIG.
pub(super) fn check(
    tools: &Tools<'_>,
    manifest: &str,
    pods: &[Pod],
    expected: &Expected,
    suite: &mut Suite,
) {
    let ours = pods
        .iter()
        .map(|pod| resolve(tools, pod, expected))
        .collect::<Result<Vec<String>, String>>();
    let outcome = ours
        .as_ref()
        .map(drop)
        .map_err(Clone::clone)
        .and_then(|()| {
            if pods.len() == expected.tasks.len() {
                Ok(())
            } else {
                Err(format!(
                    "{} pods, expected {}",
                    pods.len(),
                    expected.tasks.len()
                ))
            }
        });
    suite.record(
        &format!("{manifest}: every pod the same cluster, each its own task"),
        outcome,
    );
    let tensorflow =
        ours.and_then(|tf_configs| agree(tools, manifest, pods, &tf_configs, expected));
    suite.record(
        &format!("{manifest}: TensorFlow's TFConfigClusterResolver agrees"),
        tensorflow,
    );
}

/// A command with only `pod`'s environment and a PATH.
fn bare(program: &Path, pod: &Pod) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(pod.env.iter().map(|(k, v)| (k, v)));
    command
}

/// Runs `tfcluster resolve` as `pod` (JSON, then TF_CONFIG) and checks its view; returns
/// its TF_CONFIG.
fn resolve(tools: &Tools<'_>, pod: &Pod, expected: &Expected) -> Result<String, String> {
    let scratch = super::scratch().join(format!("resolve-{}", pod.host));
    let run = |format: &str| {
        let mut command = bare(tools.tfcluster, pod);
        command.args(["resolve", "--from", "k8s-indexed", "--format", format]);
        let shown = format!("{} (as pod {})", deadline::show(&command), pod.host);
        deadline::run(&mut command, &scratch, TIMEOUT)?
            .success(&shown)
            .map(|finished| finished.stdout)
    };
    let json: Value = serde_json::from_str(&run("json")?)
        .map_err(|e| format!("pod {}: resolve printed no JSON: {e}", pod.host))?;
    let own = expected
        .tasks
        .iter()
        .find(|(host, _, _)| *host == pod.host)
        .ok_or_else(|| format!("pod {} is not one the manifest means", pod.host))?;
    let task = (json["task_type"].as_str(), json["task_id"].as_u64());
    if json["cluster"] != expected.cluster || task != (Some(own.1.as_str()), Some(own.2)) {
        return Err(format!(
            "pod {}: resolved {}, task {task:?}; expected {}, task ({}, {})",
            pod.host, json["cluster"], expected.cluster, own.1, own.2
        ));
    }
    Ok(run("tf-config")?.trim().to_owned())
}

/// TensorFlow's view of every pod's TF_CONFIG is the expected cluster and the pod's task.
fn agree(
    tools: &Tools<'_>,
    manifest: &str,
    pods: &[Pod],
    tf_configs: &[String],
    expected: &Expected,
) -> Result<(), String> {
    let scratch = super::scratch().join(format!("tensorflow-{manifest}"));
    let input = scratch.with_extension("in");
    std::fs::write(&input, tf_configs.join("\n") + "\n")
        .map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let mut command = venv::command(tools.python);
    command
        .args(["-c", TENSORFLOW])
        .arg(&input)
        .env("CUDA_VISIBLE_DEVICES", "")
        .env("TF_CPP_MIN_LOG_LEVEL", "2");
    let shown = deadline::show(&command);
    let finished = deadline::run(&mut command, &scratch, TIMEOUT)?.success(&shown)?;
    let views: Vec<&str> = finished.stdout.lines().collect();
    if views.len() != pods.len() {
        return Err(format!(
            "TensorFlow printed {} views for {} pods:\n{}",
            views.len(),
            pods.len(),
            finished.stdout
        ));
    }
    for (view, pod) in views.iter().zip(pods) {
        let host = &pod.host;
        let (_, job, index) = expected
            .tasks
            .iter()
            .find(|(task_host, _, _)| task_host == host)
            .ok_or_else(|| format!("pod {host} is not one the manifest means"))?;
        let view: Value = serde_json::from_str(view)
            .map_err(|e| format!("pod {host}: TensorFlow's view is no JSON ({e}): {view}"))?;
        let want = json!({"cluster": expected.cluster, "task_type": job, "task_id": index});
        if view != want {
            return Err(format!(
                "pod {host}: TensorFlow read {view}, expected {want}"
            ));
        }
    }
    Ok(())
}
