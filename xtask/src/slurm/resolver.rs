//! The Slurm resolver on real steps: srun runs the `slurm_rank` example of `cluster-resolver`
//! on every rank, each rank prints the cluster it computed as one JSON line, and the checks here
//! hold those lines against where srun actually put each rank.
//!
//! Checked for block (default and explicit) and cyclic steps of `-N3 -n5`, with and without a
//! jobs map: every rank computes the same spec; each rank's own address is on its
//! `SLURMD_NODENAME` and is the spec's address of its task; no two tasks share a node and port;
//! task types and indices follow the jobs map in job-name order (`worker` 0..4 without one).
//! A `plane` step must be refused by the resolver, not resolved wrongly.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use super::cluster::Cluster;
use super::placement::Scenario;
use super::srun::RankOutput;

/// The example that resolves and prints one rank's view.
const EXAMPLE: &str = "slurm_rank";

/// The jobs-map arguments of the jobs scenario, and the same map for its check.
pub(crate) const JOB_ARGS: [&str; 2] = ["ps=2", "worker=3"];
const JOBS: [(&str, u32); 2] = [("ps", 2), ("worker", 3)];

/// srun's placement of `-N3 -n5`, as the shell scenarios observe it.
const BLOCK: [&str; 5] = ["node1", "node1", "node2", "node2", "node3"];
const CYCLIC: [&str; 5] = ["node1", "node2", "node3", "node1", "node2"];

/// Builds the example and returns its executable.
pub(crate) fn build_example() -> Result<PathBuf, String> {
    crate::test_build::artifact("cluster-resolver", "example", EXAMPLE)
}

/// The resolver scenarios: `plain` runs the example alone, `with_jobs` with [`JOB_ARGS`].
pub(crate) fn scenarios<'a>(plain: &'a [&'a str], with_jobs: &'a [&'a str]) -> Vec<Scenario<'a>> {
    vec![
        Scenario {
            name: "resolver block",
            srun_args: &["-N3", "-n5"],
            program: plain,
            check: Box::new(|ranks| check(ranks, &BLOCK, &[("worker", 5)], "block")),
        },
        Scenario {
            name: "resolver explicit block",
            srun_args: &["-N3", "-n5", "--distribution=block"],
            program: plain,
            check: Box::new(|ranks| check(ranks, &BLOCK, &[("worker", 5)], "block")),
        },
        Scenario {
            name: "resolver cyclic",
            srun_args: &["-N3", "-n5", "--distribution=cyclic"],
            program: plain,
            check: Box::new(|ranks| check(ranks, &CYCLIC, &[("worker", 5)], "cyclic")),
        },
        Scenario {
            name: "resolver cyclic with jobs ps=2 worker=3",
            srun_args: &["-N3", "-n5", "--distribution=cyclic"],
            program: with_jobs,
            check: Box::new(|ranks| check(ranks, &CYCLIC, &JOBS, "cyclic")),
        },
    ]
}

/// A `plane` step: Slurm runs it, the resolver must refuse it (naming the distribution)
/// instead of computing a layout it cannot know.
pub(crate) fn check_refused(cluster: &Cluster, program: &[&str]) -> Result<(), String> {
    let args = ["-N3", "-n5", "--distribution=plane=2"];
    let started = Instant::now();
    let expected = "SLURM_DISTRIBUTION=\"plane\" is not supported";
    match cluster.srun(&args, program) {
        Ok(ranks) => Err(format!(
            "srun {} {}: the resolver should refuse a plane layout, but every rank resolved:\n{}",
            args.join(" "),
            program.join(" "),
            ranks
                .iter()
                .map(|r| r.stdout.trim())
                .collect::<Vec<_>>()
                .join("\n")
        )),
        Err(e) if e.contains(expected) => {
            eprintln!(
                "xtask: slurm: resolver refuses plane (srun {}) passed in {:.2?}",
                args.join(" "),
                started.elapsed()
            );
            Ok(())
        }
        Err(e) => Err(format!(
            "srun {} {} failed, but not with the resolver's {expected:?}:\n{e}",
            args.join(" "),
            program.join(" ")
        )),
    }
}

/// One rank's line.
struct Line {
    rank: u32,
    nodename: String,
    spec: Value,
    task_type: String,
    task_id: u32,
    address: String,
    distribution: String,
}

fn parse(output: &RankOutput) -> Result<Line, String> {
    let v: Value = serde_json::from_str(output.stdout.trim())
        .map_err(|e| format!("not one JSON line ({e}): {:?}", output.stdout))?;
    let text = |key: &str| {
        v[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no string {key:?} in {v}"))
    };
    let number = |key: &str| {
        v[key]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("no number {key:?} in {v}"))
    };
    Ok(Line {
        rank: number("rank")?,
        nodename: text("nodename")?,
        spec: v["spec"].clone(),
        task_type: text("task_type")?,
        task_id: number("task_id")?,
        address: text("address")?,
        distribution: text("distribution")?,
    })
}

/// Checks the ranks' lines: rank `i` ran on `nodes[i]` and says so, all specs are equal, each
/// address is its node's and unique, tasks follow `jobs` (walked in name order, as
/// TensorFlow's resolver does), and the spec lists exactly the ranks' addresses.
fn check(
    ranks: &[RankOutput],
    nodes: &[&str],
    jobs: &[(&str, u32)],
    distribution: &str,
) -> Result<(), String> {
    if ranks.len() != nodes.len() {
        return Err(format!(
            "expected {} ranks, got {}",
            nodes.len(),
            ranks.len()
        ));
    }
    let mut sorted_jobs = jobs.to_vec();
    sorted_jobs.sort_unstable();
    let expected_task = |rank: u32| {
        let mut first = 0;
        for &(job, n) in &sorted_jobs {
            if rank < first + n {
                return Some((job, rank - first));
            }
            first += n;
        }
        None
    };
    let mut wrong = Vec::new();
    let mut lines = Vec::new();
    for (output, node) in ranks.iter().zip(nodes) {
        match parse(output) {
            Ok(line) => {
                let mut problems = Vec::new();
                if line.rank != output.rank {
                    problems.push(format!("says rank {}", line.rank));
                }
                if line.nodename != *node {
                    problems.push(format!("SLURMD_NODENAME is {}, not {node}", line.nodename));
                }
                let host = line.address.rsplit_once(':').map(|(h, _)| h);
                if host != Some(line.nodename.as_str()) {
                    problems.push(format!(
                        "its address {} is not on its node {}",
                        line.address, line.nodename
                    ));
                }
                let own = &line.spec[&line.task_type][line.task_id as usize];
                if own.as_str() != Some(line.address.as_str()) {
                    problems.push(format!(
                        "the spec's {}/{} is {own}, not its address {}",
                        line.task_type, line.task_id, line.address
                    ));
                }
                let want = expected_task(output.rank);
                if want != Some((line.task_type.as_str(), line.task_id)) {
                    problems.push(format!(
                        "is {}/{}, expected {want:?}",
                        line.task_type, line.task_id
                    ));
                }
                if line.distribution != distribution {
                    problems.push(format!(
                        "used distribution {}, expected {distribution}",
                        line.distribution
                    ));
                }
                if !problems.is_empty() {
                    wrong.push(format!("rank {}: {}", output.rank, problems.join("; ")));
                }
                lines.push(line);
            }
            Err(e) => wrong.push(format!("rank {}: {e}", output.rank)),
        }
    }
    if let Some(first) = lines.first() {
        for line in &lines[1..] {
            if line.spec != first.spec {
                wrong.push(format!(
                    "rank {} computed {} but rank {} computed {}",
                    line.rank, line.spec, first.rank, first.spec
                ));
            }
        }
        let mut seen = HashSet::new();
        for line in &lines {
            if !seen.insert(line.address.as_str()) {
                wrong.push(format!(
                    "rank {} shares node and port {} with another task",
                    line.rank, line.address
                ));
            }
        }
        let in_spec: BTreeSet<&str> = first
            .spec
            .as_object()
            .into_iter()
            .flat_map(|jobs| jobs.values())
            .flat_map(|tasks| tasks.as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let of_ranks: BTreeSet<&str> = lines.iter().map(|l| l.address.as_str()).collect();
        if in_spec != of_ranks {
            wrong.push(format!(
                "the spec's addresses {in_spec:?} are not the ranks' {of_ranks:?}"
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}
