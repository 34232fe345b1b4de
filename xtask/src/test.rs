//! `cargo xtask test`: every check CI runs, then every test suite, counted.
//!
//! It installs what the tests need first (the TensorFlow 2.21 venv, Debian's Slurm, etcd,
//! Prometheus, buildah and musl) and removes the network namespaces an earlier, killed run
//! left, so a fresh machine runs the same suite as a developer's. fmt, the workspace's clippy
//! and codegen's check stop it at the first failure; the other checks (each feature set's
//! clippy, the public-API listings, the docs) and the builds only some suites need run beside
//! the tests at idle priority ([`crate::beside`]), and a failure of theirs fails the run at its
//! end. The test suites all run, each counted ([`crate::tally`]), and it ends with one line,
//! `xtask: N passed, N failed`, over all of them, checked against the floors in
//! `xtask/test-floors.txt`, after a table of where the time went ([`crate::timings`]). While
//! the tests run, no packet they send may leave the machine ([`crate::off_machine`]).

use std::process::Command;

use crate::tally::{self, Floors, Tally};
use crate::timings::Timings;
use crate::{
    benches, beside, codegen, doc_links, etcd, features, guide, host_jobs, image, interop,
    kubernetes, off_machine, prometheus, python, release_workflow, slurm, test_build, tf_venv,
    workspace,
};

pub(crate) fn run() -> Result<(), String> {
    let floors = Floors::read()?;
    let mut timings = Timings::default();
    let (python, off_machine) = timings.time(
        "install: namespaces swept, TF venv, Slurm, etcd, Prometheus, buildah, musl, nftables",
        || {
            let swept = net_hosts::sweep();
            if !swept.is_empty() {
                eprintln!(
                    "xtask: removed what killed test runs left: {}",
                    swept.join(", ")
                );
            }
            let python = tf_venv::ensure()?;
            slurm::ensure_installed()?;
            etcd::ensure_installed()?;
            prometheus::ensure_installed()?;
            // Here, not in the image suite: the musl build runs beside, and apt one at a time.
            image::install()?;
            Ok::<_, String>((python, off_machine::Guard::install()?))
        },
    )?;
    timings.time("check: cargo fmt", || {
        workspace::run(Command::new("cargo").args(["fmt", "--all", "--check"]))
    })?;
    // The workspace's clippy, every target with all features, is the tests' build: the
    // workspace's crates compiled by clippy-driver (`test_build`), which every suite after uses.
    timings.time(
        "check: clippy, the workspace with all features, as the tests' build",
        test_build::build_linted,
    )?;
    timings.time("check: codegen", || codegen::run(true))?;
    let beside = beside::start();
    let mut tally = Tally::default();
    // Every relative link of the docs resolves: a file, a heading.
    tally.add([timings.time("suite: links", doc_links::suite)]);
    // Every shell example of the README and the guide runs as written (Slurm's: below).
    tally.add([timings.time("suite: guide", || guide::suite(None))]);
    // The release automation: linted, and running what the test command runs.
    tally.add([timings.time("suite: release workflow", release_workflow::suite)]);
    // Every binary runs though one fails; the interop tests run once, as their own suite.
    // Its time is the build's and every binary's (each binary's own is in its line above).
    tally.add(timings.time(
        "suite: workspace (build, every test binary, the host jobs beside)",
        || host_jobs::suites(&python),
    ));
    // Every criterion benchmark, run once: a bench that no longer runs fails here.
    tally.add(timings.time("suite: benches, each benchmark once", benches::suites));
    tally.add(timings.time("suite: interop", interop::suites));
    // deploy/kubernetes/'s manifests: validated, resolved in every pod, trained across hosts.
    tally.add([timings.time("suite: kubernetes", kubernetes::run)]);
    // The Python package: its wheel built and installed into the TF venv, its pytest suite.
    tally.add([timings.time("suite: python", python::suite)]);
    // The Dockerfile's image, built and run.
    tally.add([timings.time("suite: image", image::suite)]);
    // The real Slurm cluster: it needs the daemons, which the unit tests do not.
    tally.add([timings.time("suite: slurm", || slurm::run(false))]);
    tally.add(timings.time("suite: each crate's feature sets", features::test));
    let done = timings.time("waiting for the checks and builds beside", || {
        beside.finish()
    });
    // Every published crate packages, and compiles from its package alone.
    tally.add([done.package]);
    let mut failed_checks = Vec::new();
    // No test sent a packet off the machine (or to a cloud's metadata address).
    if let Err(e) = off_machine.finish() {
        failed_checks.push(format!("  off the machine: {e}"));
    }
    for (step, took, outcome) in done.steps {
        timings.beside(step, took);
        if let Err(e) = outcome {
            failed_checks.push(format!("  beside: {step}: {e}"));
        }
    }
    let counted = tally::finish(&tally, &floors, true, Some(&timings));
    if failed_checks.is_empty() {
        counted
    } else {
        // Not tests, so not counted: listed after the count, and the run fails.
        println!("\nxtask: checks beside the tests that failed:");
        for line in &failed_checks {
            println!("{line}");
        }
        Err(format!(
            "{} check(s) beside the tests failed",
            failed_checks.len()
        ))
    }
}
