//! The manifests' own commands run on three hosts named as their pods are
//! ([`crate::host_network`]: a network namespace each, `/etc/hosts` naming host `i`
//! `<job>-<i>.<subdomain>` and its `.<namespace>.svc` and `.svc.cluster.local` forms for each
//! Indexed Job), each started with only its pod's environment (and PATH, HOME): the
//! MultiWorkerMirroredStrategy job trains (its `/app/train.py` is the Slurm suite's
//! `mwms_train.py`), and the elastic job's agents, with `--dry-run` added, form a round at the
//! rendezvous pod 0 serves, with the token of the manifest's Secret in the file it mounts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::pods::{NAMESPACE, Pod};
use super::resolve::Tools;
use crate::host_network::{self, Network, Plan};
use crate::slurm::{RankOutput, check_training, deadline};
use crate::tally::Suite;
use crate::workspace;

/// Three workers importing TensorFlow and training 30 steps on a loaded 2-core machine.
const TRAINING_TIMEOUT: Duration = Duration::from_secs(240);
/// A round of three agents forms in seconds.
const ROUND_TIMEOUT: Duration = Duration::from_secs(60);
/// What stands for `/app/train.py` in the manifests' commands.
const TRAIN_PY: &str = "/app/train.py";
/// Where the elastic manifest mounts the token's Secret.
const TOKEN_PATH: &str = "/etc/tfcluster/rdzv/token";

/// Makes the hosts, records the training and the elastic round, and removes the hosts (on
/// failure too: the network is removed when dropped).
pub(super) fn run(
    tools: &Tools<'_>,
    mwms: &[Pod],
    elastic: &[Pod],
    suite: &mut Suite,
) -> Result<(), String> {
    let network = Network::create(plan(&[mwms, elastic])?)?;
    suite.record(
        "mwms-indexed-job.yaml: MultiWorkerMirroredStrategy trains on 3 hosts named as its pods",
        train(&network, tools, mwms),
    );
    suite.record(
        "elastic-indexed-job.yaml: its agents form a round at pod 0's rendezvous (--dry-run)",
        elastic_round(&network, tools, elastic),
    );
    network.remove();
    Ok(())
}

/// Host `k8s-<i>` at 192.0.2.(31+i), named as pod `i` of each job.
fn plan(jobs: &[&[Pod]]) -> Result<Plan, String> {
    let count = jobs.iter().map(|pods| pods.len()).max().unwrap_or(0);
    if count > 3 {
        return Err(format!("{count} pods in a job; the hosts are for 3"));
    }
    let hosts = (0..count)
        .map(|i| host_network::Host {
            name: format!("k8s-{i}"),
            address: format!("192.0.2.{}", 31 + i),
            names: jobs
                .iter()
                .filter_map(|pods| pods.get(i))
                .flat_map(|pod| {
                    let short = format!("{}.{}", pod.host, pod.subdomain);
                    let svc = format!("{short}.{NAMESPACE}.svc");
                    [short, format!("{svc}.cluster.local"), svc]
                })
                .collect(),
        })
        .collect();
    Ok(Plan {
        bridge: "tfc-k8s-br",
        mark: "# tfcluster xtask kubernetes",
        hosts,
    })
}

/// Every pod of `pods` on its host at once, its command with `args` mapped by `map`, with
/// only its environment; each one's output, in index order.
fn run_pods(
    network: &Network,
    tools: &Tools<'_>,
    pods: &[Pod],
    map: impl Fn(&str) -> Vec<String> + Sync,
    timeout: Duration,
) -> Result<Vec<RankOutput>, String> {
    let bin = |path: &Path| path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let paths = [bin(tools.tfcluster), bin(tools.python)];
    let path = std::env::join_paths(
        paths
            .iter()
            .map(PathBuf::as_path)
            .chain(["/usr/local/bin", "/usr/bin", "/bin"].map(Path::new)),
    )
    .map_err(|e| format!("a PATH of the build's and the venv's directories: {e}"))?;
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    std::thread::scope(|s| {
        let running: Vec<_> = pods
            .iter()
            .enumerate()
            .map(|(i, pod)| {
                let (program, args) = pod.command.split_first().unzip();
                let mut command = network.command(
                    &format!("k8s-{i}"),
                    Path::new(program.map_or("", String::as_str)),
                );
                command
                    .args(args.into_iter().flatten().flat_map(|arg| map(arg)))
                    .env_clear()
                    .envs(pod.env.iter().map(|(k, v)| (k, v)))
                    .env("PATH", &path)
                    .env("HOME", &home);
                let scratch = super::scratch().join(format!("pod-{}", pod.host));
                s.spawn(move || {
                    let shown = format!("{} (pod {})", deadline::show(&command), pod.host);
                    deadline::run(&mut command, &scratch, timeout)?.success(&shown)
                })
            })
            .collect();
        running
            .into_iter()
            .zip(0..)
            .map(|(handle, rank)| {
                let finished = handle
                    .join()
                    .map_err(|_| "a pod's thread panicked".to_owned())??;
                Ok(RankOutput {
                    rank,
                    stdout: finished.stdout,
                    stderr: finished.stderr,
                })
            })
            .collect()
    })
}

/// The Indexed Job's command on its three hosts: every worker trains and sees one cluster.
fn train(network: &Network, tools: &Tools<'_>, pods: &[Pod]) -> Result<(), String> {
    let script = workspace::root().join("tfcluster/tests/scripts/mwms_train.py");
    let script = crate::slurm::text(script)?;
    let map = |arg: &str| {
        vec![if arg == TRAIN_PY {
            script.clone()
        } else {
            arg.to_owned()
        }]
    };
    let ranks = run_pods(network, tools, pods, map, TRAINING_TIMEOUT)?;
    check_training(&ranks, "kubernetes")
}

/// The elastic job's agents on their three hosts with `--dry-run`, the token file a fresh
/// `tfcluster rendezvous token`: each prints one TF_CONFIG, the same cluster of 2 or 3 tasks
/// in all (`--nodes 2:3`).
fn elastic_round(network: &Network, tools: &Tools<'_>, pods: &[Pod]) -> Result<(), String> {
    // The Secret a user makes first, from `tfcluster rendezvous token`.
    let made = std::process::Command::new(tools.tfcluster)
        .args(["rendezvous", "token"])
        .output()
        .map_err(|e| format!("cannot run tfcluster rendezvous token: {e}"))?;
    if !made.status.success() {
        return Err(format!("tfcluster rendezvous token failed: {made:?}"));
    }
    let token_file = super::scratch().join("rdzv-token");
    std::fs::write(&token_file, made.stdout.trim_ascii_end())
        .map_err(|e| format!("cannot write {}: {e}", token_file.display()))?;
    let token_file = crate::slurm::text(token_file)?;
    let script =
        crate::slurm::text(workspace::root().join("tfcluster/tests/scripts/mwms_train.py"))?;
    let map = |arg: &str| match arg {
        "run" => vec!["run".to_owned(), "--dry-run".to_owned()],
        TOKEN_PATH => vec![token_file.clone()],
        TRAIN_PY => vec![script.clone()],
        _ => vec![arg.to_owned()],
    };
    let agents = run_pods(network, tools, pods, map, ROUND_TIMEOUT)?;
    let mut clusters = Vec::new();
    for agent in &agents {
        let tf_config = agent
            .stdout
            .lines()
            // `[HOST/JOB:INDEX] NAME=VALUE` lines.
            .find_map(|line| line.split_once("] TF_CONFIG=").map(|(_, value)| value))
            .ok_or_else(|| {
                format!(
                    "pod {} printed no TF_CONFIG:\n{}",
                    agent.rank,
                    deadline::streams(&agent.stdout, &agent.stderr)
                )
            })?;
        let tf_config: Value = serde_json::from_str(tf_config).map_err(|e| {
            format!(
                "pod {}: TF_CONFIG is no JSON ({e}): {tf_config}",
                agent.rank
            )
        })?;
        clusters.push(tf_config["cluster"].clone());
    }
    let tasks = clusters[0].as_object().map_or(0, |jobs| {
        jobs.values()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .sum()
    });
    if clusters.iter().any(|c| *c != clusters[0]) || !(2..=3).contains(&tasks) {
        return Err(format!(
            "the agents' clusters differ or hold other than 2 to 3 tasks: {clusters:?}"
        ));
    }
    eprintln!("xtask: kubernetes: elastic round: {}", clusters[0]);
    Ok(())
}
