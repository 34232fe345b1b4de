//! `cargo xtask slurm`: a real three-node Slurm 22.05 cluster on this one machine, each node a
//! host of its own on a real (virtual) network, for tests that need srun's own view of a job.
//!
//! [`ensure_installed`] installs Debian's `slurm-wlm` and `munge` (and `iproute2`) when missing
//! (`cargo xtask test` calls it: the client tools are a test oracle). [`Cluster::start`] makes
//! the hosts' network (a namespace per host, 192.0.2.10 for the controller and
//! 192.0.2.11..13 for `node1..node3`, see [`crate::host_network`]) and runs munged, slurmctld and
//! `slurmd -N node1..node3` as children of this process with their files under
//! `target/slurm/run`; [`Cluster::srun`] runs a program on it and returns each rank's output;
//! stopping or dropping the cluster stops every daemon and removes the network. The task itself
//! builds the `slurm_rank` example of `cluster-resolver` and the `tfcluster` binary, starts a
//! cluster, runs the shell placement [`Scenario`]s, the resolver scenarios (every rank runs the
//! example; see [`resolver`]) and the TensorFlow ones (`srun -N3 -n3 tfcluster run --from slurm
//! -- python mwms_train.py`, `srun -N3 -n3 python mwms_train_resolver.py` with the Python
//! package's `tfcluster.tf.SlurmClusterResolver`, and TensorFlow's own SlurmClusterResolver in
//! the same steps; see [`tensorflow`]) and the guide's Slurm examples ([`guide::run_by`] on
//! the controller's host), prints timings and stops it.

mod cluster;
mod config;
mod daemon;
pub(crate) mod deadline;
mod hosts;
mod install;
mod leftovers;
mod munge;
mod oracle;
mod placement;
mod resolver;
mod srun;
mod tensorflow;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub(crate) use cluster::Cluster;
pub(crate) use install::ensure_installed;
pub(crate) use oracle::oracle_conf;
pub(crate) use placement::Scenario;
pub(crate) use srun::RankOutput;
pub(crate) use tensorflow::check_training;

use crate::guide;
use crate::tally::{self, Suite};
use crate::test_build;
use crate::workspace;

/// Everything the local cluster writes: apt logs, and `run/` with config, state and daemon logs.
fn state_dir() -> PathBuf {
    workspace::root().join("target/slurm")
}

/// The suite's name in the tally and the floors file.
const SUITE: &str = "slurm: checks";

/// `cargo xtask slurm` alone, its checks counted; with `show_env`, also prints every rank's
/// `SLURM*` variables.
pub(crate) fn task(show_env: bool) -> Result<(), String> {
    tally::alone([run(show_env)])
}

/// Every Slurm check, each counted as it passes or fails; a check that fails does not stop
/// the others, a cluster that does not start stops them all (one failure).
pub(crate) fn run(show_env: bool) -> Suite {
    let mut suite = Suite::new(SUITE);
    if let Err(e) = checks(show_env, &mut suite) {
        suite.record("the Slurm cluster", Err(e));
    }
    suite
}

fn checks(show_env: bool, suite: &mut Suite) -> Result<(), String> {
    // Before the clock starts: the timings are about Slurm, not apt.
    ensure_installed()?;
    suite.record("scontrol show hostnames, no cluster", check_oracle());
    let building = Instant::now();
    let example = text(resolver::build_example()?)?;
    let tfcluster = text(test_build::artifact("tfcluster", "bin", "tfcluster")?)?;
    eprintln!(
        "xtask: slurm: built {example} and {tfcluster} in {:.2?}",
        building.elapsed()
    );
    // TensorFlow's venv, with the tfcluster Python package installed for tfcluster.tf.
    let python = text(crate::python::install()?)?;
    let plain = [example.as_str()];
    let with_jobs = [
        example.as_str(),
        resolver::JOB_ARGS[0],
        resolver::JOB_ARGS[1],
    ];
    let started = Instant::now();
    let cluster = Cluster::start()?;
    eprintln!("xtask: slurm cluster up in {:.2?}", started.elapsed());
    let scenarios = placement::shell_scenarios();
    for scenario in &scenarios {
        run_scenario(&cluster, scenario, suite);
    }
    for scenario in &resolver::scenarios(&plain, &with_jobs) {
        run_scenario(&cluster, scenario, suite);
    }
    suite.record(
        "a plane distribution refused",
        resolver::check_refused(&cluster, &plain),
    );
    tensorflow::run(&cluster, &tfcluster, &python, suite)?;
    // The guide's Slurm examples, each as a user pastes it on the controller's host.
    let tools = guide::Tools::new(Path::new(&tfcluster), Path::new(&python))?;
    for example in guide::slurm_examples()? {
        let started = Instant::now();
        let outcome = cluster
            .client("bash")
            .and_then(|bash| guide::run_by(&example, bash, &tools));
        if outcome.is_ok() {
            eprintln!(
                "xtask: slurm: the guide's {} passed in {:.2?}",
                example.place,
                started.elapsed()
            );
        }
        suite.record(&format!("the guide's {}", example.place), outcome);
    }
    if show_env {
        for scenario in &scenarios {
            let ranks = cluster.srun(scenario.srun_args, &placement::PRINT_SLURM_ENV)?;
            for rank in ranks {
                println!(
                    "== {} rank {} ==\n{}",
                    scenario.name,
                    rank.rank,
                    rank.stdout.trim_end()
                );
            }
        }
    }
    let stopping = Instant::now();
    cluster.stop()?;
    eprintln!("xtask: slurm cluster stopped in {:.2?}", stopping.elapsed());
    eprintln!(
        "xtask: slurm: {} checks passed, {} failed in {:.2?}",
        suite.passed,
        suite.failed.len(),
        started.elapsed()
    );
    Ok(())
}

/// `path` as text, for a program's argument list (srun's arguments are strings).
pub(crate) fn text(path: PathBuf) -> Result<String, String> {
    path.into_os_string()
        .into_string()
        .map_err(|path| format!("the path {} is not UTF-8", PathBuf::from(path).display()))
}

/// Runs one scenario on `cluster` and checks it, printing its timing; its outcome goes to
/// `suite`.
pub(crate) fn run_scenario(cluster: &Cluster, scenario: &Scenario<'_>, suite: &mut Suite) {
    let started = Instant::now();
    let outcome = cluster
        .srun(scenario.srun_args, scenario.program)
        .and_then(|ranks| {
            (scenario.check)(&ranks).map_err(|e| {
                format!(
                    "srun {} {}: wrong output:\n{e}",
                    scenario.srun_args.join(" "),
                    scenario.program.join(" "),
                )
            })?;
            eprintln!(
                "xtask: slurm: {} ({} ranks, srun {}) passed in {:.2?}",
                scenario.name,
                ranks.len(),
                scenario.srun_args.join(" "),
                started.elapsed()
            );
            Ok(())
        });
    suite.record(scenario.name, outcome);
}

/// Checks that `scontrol show hostnames` works without a cluster, as the tests use it.
fn check_oracle() -> Result<(), String> {
    let list = "node[1-3],gpu[08-10]";
    let expanded = oracle::show_hostnames(&oracle_conf()?, list)?;
    let expected = ["node1", "node2", "node3", "gpu08", "gpu09", "gpu10"];
    if expanded == expected {
        Ok(())
    } else {
        Err(format!(
            "scontrol show hostnames {list} gave {expanded:?}, not {expected:?}"
        ))
    }
}
