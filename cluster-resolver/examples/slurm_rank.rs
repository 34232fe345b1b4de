//! Resolves the Slurm step this process runs in and prints one JSON line: what this rank
//! computed. Run it on every rank of a step and compare the lines:
//!
//! ```text
//! srun -N3 -n5 --distribution=cyclic target/debug/examples/slurm_rank [JOB=TASKS ...]
//! ```
//!
//! The optional `JOB=TASKS` arguments are the jobs map (`ps=2 worker=3`); without them every
//! task is a `worker`. The line holds `rank` (`SLURM_PROCID`), `nodename` (`SLURMD_NODENAME`),
//! `spec` (the cluster, in TF_CONFIG's `cluster` shape), `task_type`, `task_id`, `address`
//! (this task's address in the spec), `master`, `distribution` and `cuda_visible_devices`.
//! `cargo xtask slurm` runs it on a local three-node Slurm cluster and checks that all ranks
//! agree and that each one's address is on the node it runs on.
//!
//! On an error (not in a Slurm step, a layout it cannot reproduce, …) it prints the error on
//! stderr and exits with status 1.

use std::process::ExitCode;

use cluster_resolver::{ClusterResolver, Env, Error, SlurmClusterResolver};
use serde_json::{Value, json};

/// Parses `JOB=TASKS` arguments into a jobs map.
fn jobs(args: &[String]) -> Result<Vec<(String, u32)>, String> {
    args.iter()
        .map(|arg| {
            let (job, tasks) = arg
                .split_once('=')
                .ok_or_else(|| format!("expected JOB=TASKS, got {arg:?}"))?;
            let tasks = tasks
                .parse()
                .map_err(|e| format!("bad task count in {arg:?}: {e}"))?;
            Ok((job.to_owned(), tasks))
        })
        .collect()
}

/// Resolves through the [`ClusterResolver`] trait, as a training program would.
async fn resolve(resolver: &SlurmClusterResolver) -> Result<Value, Error> {
    let spec = resolver.cluster_spec().await?;
    let (task_type, task_id) = resolver.task_info()?;
    let address = spec.task_address(&task_type, task_id)?.to_owned();
    let step = resolver.resolve()?;
    Ok(json!({
        "rank": step.rank(),
        "nodename": std::env::var("SLURMD_NODENAME").ok(),
        "spec": serde_json::from_str::<Value>(&spec.to_json()).unwrap_or(Value::Null),
        "task_type": task_type,
        "task_id": task_id,
        "address": address,
        "master": resolver.master(None, None, None).await?,
        "distribution": step.distribution().as_str(),
        "cuda_visible_devices": resolver.cuda_visible_devices()?,
    }))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut resolver = SlurmClusterResolver::new(Env::process());
    match jobs(&args) {
        Ok(jobs) if jobs.is_empty() => {}
        Ok(jobs) => resolver = resolver.with_jobs(jobs),
        Err(e) => {
            eprintln!("slurm_rank: {e}");
            return ExitCode::from(2);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("slurm_rank: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(resolve(&resolver)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slurm_rank: {e}");
            ExitCode::FAILURE
        }
    }
}
