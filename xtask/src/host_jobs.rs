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

use crate::tally::{self, Suite};
use crate::{interop, test_build};

/// The modules of `tfcluster`'s integration tests that run host jobs.
const MODULES: &[&str] = &["elastic_etcd::", "elastic_hosts::", "secure_hosts::"];

/// The suites of `cargo test --workspace --all-features` (the interop tests skipped, their
/// suite runs them), the host jobs' binary labelled `host jobs`, every other `workspace`.
pub(crate) fn suites(python: &Path) -> Vec<Suite> {
    // The tests' build, which the guide made: the binary is run as it is, as a `cargo test
    // --test tfcluster` of its own would build it again with other features.
    let binary = match test_build::artifact("tfcluster", "test", "tfcluster") {
        Ok(binary) => binary,
        Err(e) => return vec![tally::broken_suite("workspace: cargo", e)],
    };
    let beside = {
        let python = python.to_owned();
        std::thread::spawn(move || {
            test_build::run_test(&binary, "tfcluster", &python, &jobs_args())
        })
    };
    let mut rest = Command::new("cargo");
    if let Err(e) = test_build::as_built(&mut rest) {
        return vec![tally::broken_suite("workspace: cargo", e)];
    }
    rest.args(["test", "--workspace", "--all-features", "--no-fail-fast"])
        .env("TFCLUSTER_PYTHON", python)
        .args(["--", "--skip", interop::FILTER]);
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

/// libtest's arguments for the host jobs: one test at a time, only theirs.
fn jobs_args() -> Vec<String> {
    let mut args = vec!["--test-threads".to_owned(), "1".to_owned()];
    args.extend(MODULES.iter().map(|m| (*m).to_owned()));
    args
}
