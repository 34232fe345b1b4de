//! Real TensorFlow on the cluster's three hosts, launched by `tfcluster run --from slurm`:
//! MultiWorkerMirroredStrategy training across the nodes, and TensorFlow's own
//! SlurmClusterResolver compared with the TF_CONFIG `tfcluster run` exported, in the same step.
//! Then the Python package's resolver, with no launcher: `srun -N3 -n3 python
//! mwms_train_resolver.py` trains with `MultiWorkerMirroredStrategy(cluster_resolver=
//! tfcluster.tf.SlurmClusterResolver())`, and under `--distribution=cyclic` every rank compares
//! it with TensorFlow's own, which must put some rank on a node it does not run on.
//!
//! What TensorFlow 2.21's resolver gets wrong here is printed, not failed on (it is TensorFlow's
//! behaviour, documented in cluster-resolver's "Differences from TensorFlow"): on CPU-only
//! nodes (`CUDA_VISIBLE_DEVICES=""`, which it counts as one GPU) it fails with two tasks on a
//! node, and given GPUs it lists the tasks as if Slurm had placed them block by block, so under
//! `--distribution=cyclic` ranks get addresses on nodes they do not run on.

use serde_json::Value;

use super::cluster::Cluster;
use super::srun::RankOutput;
use super::{Scenario, run_scenario, text};
use crate::tally::Suite;
use crate::workspace;

/// Each rank's environment for TensorFlow: no GPUs (the nodes have none), quiet logs.
const ENV: [&str; 3] = ["env", "CUDA_VISIBLE_DEVICES=", "TF_CPP_MIN_LOG_LEVEL=2"];

/// Prints one JSON line: the node, the TF_CONFIG `tfcluster run` set, and TensorFlow's
/// SlurmClusterResolver's view of the same step, by default and as on nodes with 2 GPUs.
const COMPARE: &str = r#"
import json, os
import tensorflow as tf

def view(**kwargs):
    try:
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(auto_set_gpu=False, **kwargs)
        cluster = resolver.cluster_spec().as_dict()
        return {"cluster": cluster, "task": {"type": resolver.task_type, "index": resolver.task_id}}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}

ours = json.loads(os.environ["TF_CONFIG"])
print(json.dumps({
    "node": os.environ["SLURMD_NODENAME"],
    "ours": {"cluster": ours["cluster"], "task": ours["task"]},
    "tensorflow": view(),
    "tensorflow_2_gpus": view(gpus_per_node=2, gpus_per_task=1),
}))
"#;

/// Each rank's view by `tfcluster.tf.SlurmClusterResolver()` and by TensorFlow's own (given 2
/// GPUs per node, without which it fails on two tasks per node), as one JSON line.
const COMPARE_RESOLVERS: &str = r#"
import json, os
import tensorflow as tf
import tfcluster.tf

def view(resolver):
    cluster = resolver.cluster_spec().as_dict()
    return {"cluster": cluster, "task": {"type": resolver.task_type, "index": resolver.task_id}}

theirs = tf.distribute.cluster_resolver.SlurmClusterResolver(
    gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False)
print(json.dumps({
    "node": os.environ["SLURMD_NODENAME"],
    "ours": view(tfcluster.tf.SlurmClusterResolver()),
    "tensorflow": view(theirs),
}))
"#;

/// Runs the TensorFlow scenarios with `tfcluster` (the binary) and TensorFlow's `python`
/// (whose venv has the Python package installed).
pub(crate) fn run(
    cluster: &Cluster,
    tfcluster: &str,
    python: &str,
    suite: &mut Suite,
) -> Result<(), String> {
    let script = text(workspace::root().join("tfcluster/tests/scripts/mwms_train.py"))?;
    let script = script.as_str();
    let launch = [tfcluster, "run", "--from", "slurm", "--"];
    let train: Vec<&str> = [&ENV[..], &launch, &[python, script]].concat();
    run_scenario(
        cluster,
        &Scenario {
            name: "tfcluster run: MultiWorkerMirroredStrategy on 3 hosts",
            srun_args: &["-N3", "-n3"],
            program: &train,
            check: Box::new(|ranks| check_training(ranks, "slurm")),
        },
        suite,
    );
    let compare: Vec<&str> = [&ENV[..], &launch, &[python, "-c", COMPARE]].concat();
    run_scenario(
        cluster,
        &Scenario {
            name: "TensorFlow's SlurmClusterResolver agrees, one task per node",
            srun_args: &["-N3", "-n3"],
            program: &compare,
            check: Box::new(|ranks| compare_views(ranks, true)),
        },
        suite,
    );
    run_scenario(
        cluster,
        &Scenario {
            name: "TensorFlow's SlurmClusterResolver, cyclic",
            srun_args: &["-N3", "-n5", "--distribution=cyclic"],
            program: &compare,
            check: Box::new(|ranks| compare_views(ranks, false)),
        },
        suite,
    );
    let resolver_script =
        text(workspace::root().join("tfcluster/tests/scripts/mwms_train_resolver.py"))?;
    let train: Vec<&str> = [&ENV[..], &[python, resolver_script.as_str()]].concat();
    run_scenario(
        cluster,
        &Scenario {
            name: "tfcluster.tf.SlurmClusterResolver: MultiWorkerMirroredStrategy on 3 hosts",
            srun_args: &["-N3", "-n3"],
            program: &train,
            check: Box::new(|ranks| check_training(ranks, "slurm")),
        },
        suite,
    );
    let compare: Vec<&str> = [&ENV[..], &[python, "-c", COMPARE_RESOLVERS]].concat();
    run_scenario(
        cluster,
        &Scenario {
            name: "tfcluster.tf.SlurmClusterResolver beside TensorFlow's, cyclic",
            srun_args: &["-N3", "-n5", "--distribution=cyclic"],
            program: &compare,
            check: Box::new(tensorflow_disagrees),
        },
        suite,
    );
    Ok(())
}

/// `tfcluster.tf.SlurmClusterResolver` puts every rank on its own node; TensorFlow's, with
/// its block layout, puts at least one elsewhere (each such rank is printed).
fn tensorflow_disagrees(ranks: &[RankOutput]) -> Result<(), String> {
    let mut wrong = 0;
    for rank in ranks {
        let line = json_line(rank)?;
        let node = line["node"].as_str().unwrap_or_default();
        let ours = address(&line["ours"]);
        if ours.split(':').next() != Some(node) || line["ours"]["task"]["index"] != rank.rank {
            return Err(format!(
                "rank {} runs on {node} but tfcluster.tf.SlurmClusterResolver gave it {ours} \
                 ({})",
                rank.rank, line["ours"]
            ));
        }
        let theirs = address(&line["tensorflow"]);
        if theirs.split(':').next() != Some(node) {
            wrong += 1;
            eprintln!(
                "xtask: slurm: rank {} on {node}: tfcluster.tf.SlurmClusterResolver gives it \
                 {ours}, TensorFlow's SlurmClusterResolver {theirs} (another node)",
                rank.rank
            );
        }
    }
    if wrong == 0 {
        return Err(
            "TensorFlow's SlurmClusterResolver put every rank on its own node under \
             --distribution=cyclic; expected it to disagree"
                .to_owned(),
        );
    }
    Ok(())
}

/// Every rank trained as worker `rank` of 3 replicas, and all saw the same cluster; each
/// rank's line is logged under `suite` (the Kubernetes suite's training is checked here too,
/// its pods' indices as ranks).
pub(crate) fn check_training(ranks: &[RankOutput], suite: &str) -> Result<(), String> {
    if ranks.len() != 3 {
        return Err(format!("expected 3 ranks, got {}", ranks.len()));
    }
    let mut digests = Vec::new();
    for rank in ranks {
        let done = format!("mwms ok worker:{} replicas=3 ", rank.rank);
        let line = rank.stdout.lines().find(|l| l.starts_with(&done));
        let Some(line) = line else {
            return Err(format!(
                "rank {} did not print {done:?}:\n{}{}",
                rank.rank, rank.stdout, rank.stderr
            ));
        };
        eprintln!("xtask: {suite}: rank {}: {line}", rank.rank);
        digests.extend(rank.stdout.lines().filter(|l| l.starts_with("cluster ")));
    }
    if digests.len() != 3 || digests.iter().any(|d| *d != digests[0]) {
        return Err(format!("the ranks saw different clusters: {digests:?}"));
    }
    Ok(())
}

/// Our TF_CONFIG puts each rank on its own node; with `agree`, TensorFlow's default view must
/// be the same. Where TensorFlow differs, says how.
fn compare_views(ranks: &[RankOutput], agree: bool) -> Result<(), String> {
    for rank in ranks {
        let line = json_line(rank)?;
        let node = line["node"].as_str().unwrap_or_default();
        let ours = &line["ours"];
        let own = address(ours);
        if own.split(':').next() != Some(node) {
            return Err(format!(
                "rank {} runs on {node} but tfcluster run gave it {own}",
                rank.rank
            ));
        }
        for key in ["tensorflow", "tensorflow_2_gpus"] {
            let theirs = &line[key];
            if theirs == ours {
                continue;
            }
            if agree && key == "tensorflow" {
                return Err(format!(
                    "rank {}: TensorFlow's resolver says {theirs}, tfcluster run {ours}",
                    rank.rank
                ));
            }
            let how = match theirs["error"].as_str() {
                Some(error) => format!("fails: {error}"),
                None if address(theirs) == own => format!(
                    "gives it {own} too, in another cluster: {}",
                    theirs["cluster"]
                ),
                None => format!(
                    "gives it {}, on another node (tfcluster run: {own})",
                    address(theirs)
                ),
            };
            eprintln!(
                "xtask: slurm: rank {} on {node}: TensorFlow's SlurmClusterResolver ({key}) {how}",
                rank.rank
            );
        }
    }
    Ok(())
}

/// The address of the task a TF_CONFIG-shaped view names, or `?`.
fn address(view: &Value) -> String {
    let task = &view["task"];
    let job = task["type"].as_str().unwrap_or_default();
    let index = task["index"].as_u64().unwrap_or_default() as usize;
    view["cluster"][job][index]
        .as_str()
        .unwrap_or("?")
        .to_owned()
}

/// A rank's output, which is one JSON line.
fn json_line(rank: &RankOutput) -> Result<Value, String> {
    serde_json::from_str(rank.stdout.trim()).map_err(|e| {
        format!(
            "rank {}: not one JSON line ({e}):\n{}{}",
            rank.rank, rank.stdout, rank.stderr
        )
    })
}
