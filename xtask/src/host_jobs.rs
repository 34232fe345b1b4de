//! The workspace's `cargo test` as two runs side by side: `tfcluster`'s tests of elastic jobs
//! across network-namespace hosts in one, every other test in the other.
//!
//! Those jobs run one at a time (`tfcluster/tests/tfcluster/host_job.rs`), each mostly
//! waiting on TensorFlow: its imports, its steps, a grace period, a rendezvous' last call.
//! In one run, libtest's second thread took the next of them and waited for the first, so
//! ten minutes of jobs ran alone on an idle core. Run on their own, one at a time, they
//! leave the other core to the rest.

use std::path::Path;
use std::process::Command;

use crate::interop;
use crate::tally::{self, Suite};
use crate::workspace;

/// The modules of `tfcluster`'s integration tests that run host jobs.
const MODULES: &[&str] = &["elastic_etcd::", "elastic_hosts::", "secure_hosts::"];

/// The suites of `cargo test --workspace --all-features` (the interop tests skipped, their
/// suite runs them), the host jobs' binary labelled `host jobs`, every other `workspace`.
pub(crate) fn suites(python: &Path) -> Vec<Suite> {
    // Built first, so neither run below builds (or waits on the other's build lock); the
    // same selection and features as theirs, so nothing is built twice.
    if let Err(e) = workspace::run(cargo_test(python).arg("--no-run")) {
        return vec![tally::broken_suite("workspace: cargo", e)];
    }
    let mut jobs = cargo_test(python);
    jobs.args(["--test", "tfcluster", "--", "--test-threads", "1"])
        .args(MODULES);
    let beside = std::thread::spawn(move || workspace::run_captured(&mut jobs));
    let mut rest = cargo_test(python);
    rest.args(["--no-fail-fast", "--", "--skip", interop::FILTER]);
    for module in MODULES {
        rest.args(["--skip", module]);
    }
    let mut suites = tally::cargo_test("workspace", &mut rest);
    let jobs = beside
        .join()
        .unwrap_or_else(|_| Err("the host jobs' run panicked".to_owned()));
    match jobs {
        Ok((output, succeeded)) => {
            println!("xtask: the host jobs, run beside the rest:\n{output}");
            suites.extend(tally::cargo_suites("host jobs", &output, succeeded));
        }
        Err(e) => suites.push(tally::broken_suite("host jobs: cargo", e)),
    }
    suites
}

/// `cargo test --workspace --all-features`, the tests finding TensorFlow at `python`.
fn cargo_test(python: &Path) -> Command {
    let mut command = Command::new("cargo");
    command
        .args(["test", "--workspace", "--all-features"])
        .env("TFCLUSTER_PYTHON", python);
    command
}
