//! `cargo xtask test`: every check CI runs, then every test suite, counted.
//!
//! It installs what the tests need first (the TensorFlow 2.21 venv, Debian's Slurm and etcd)
//! and removes the network namespaces an earlier, killed run left, so a fresh machine runs
//! the same suite as a developer's. The checks that are not tests (fmt, clippy, codegen,
//! public-API listings, docs) stop it at the first failure; the test suites all run, each counted
//! ([`crate::tally`]), and it ends with one line, `xtask: N passed, N failed`, over all of
//! them, checked against the floors in `xtask/test-floors.txt`, after a table of where the
//! time went ([`crate::timings`]).

use std::process::Command;

use crate::tally::{self, Floors, Tally};
use crate::timings::Timings;
use crate::{
    codegen, doc_links, etcd, features, guide, guide_rust, host_jobs, image, interop, kubernetes,
    package, prometheus, public_api, python, release_workflow, slurm, tf_venv, workspace,
};

pub(crate) fn run() -> Result<(), String> {
    let floors = Floors::read()?;
    let mut timings = Timings::default();
    let python = timings.time(
        "install: namespaces swept, TF venv, Slurm, etcd, Prometheus",
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
            Ok::<_, String>(python)
        },
    )?;
    timings.time("check: cargo fmt", || {
        workspace::run(Command::new("cargo").args(["fmt", "--all", "--check"]))
    })?;
    timings.time("check: clippy, the workspace with all features", || {
        workspace::run(Command::new("cargo").args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    timings.time("check: clippy, each crate's feature sets", features::check)?;
    timings.time("check: codegen", || codegen::run(true))?;
    timings.time(
        "check: the Rust guide page's crate alone",
        guide_rust::clippy_alone,
    )?;
    // An API change without its listing regenerated: the review would not show it.
    timings.time("check: public-API listings", || public_api::run(true))?;
    // Broken intra-doc links and bad doc markup fail like any other warning.
    timings.time("check: cargo doc, as docs.rs builds too", || {
        workspace::run(
            Command::new("cargo")
                .args(["doc", "--workspace", "--no-deps", "--all-features"])
                .env("RUSTDOCFLAGS", "-D warnings"),
        )?;
        features::docs_rs()
    })?;
    let mut tally = Tally::default();
    // Every relative link of the docs resolves: a file, a heading.
    tally.add([timings.time("suite: links", doc_links::suite)]);
    // Every published crate packages, and compiles from its package alone.
    tally.add([timings.time("suite: package", package::suite)]);
    // Every shell example of the README and the guide runs as written (Slurm's: below). The
    // tests' build is made here, once, for every suite below.
    tally.add([timings.time("suite: guide", || guide::suite(None))]);
    // The release automation: linted, and running what the test command runs.
    tally.add([timings.time("suite: release workflow", release_workflow::suite)]);
    // Every binary runs though one fails; the interop tests run once, as their own suite.
    // Its time is the build's and every binary's (each binary's own is in its line above).
    tally.add(timings.time(
        "suite: workspace (build, every test binary, the host jobs beside)",
        || host_jobs::suites(&python),
    ));
    tally.add(timings.time("suite: each crate's feature sets", features::test));
    tally.add(timings.time("suite: interop", interop::suites));
    // The Python package: its wheel built and installed into the TF venv, its pytest suite.
    tally.add([timings.time("suite: python", python::suite)]);
    // The Dockerfile's image, built and run.
    tally.add([timings.time("suite: image", image::suite)]);
    // deploy/kubernetes/'s manifests: validated, resolved in every pod, trained across hosts.
    tally.add([timings.time("suite: kubernetes", kubernetes::run)]);
    // The real Slurm cluster last: it needs the daemons, which the unit tests do not.
    tally.add([timings.time("suite: slurm", || slurm::run(false))]);
    tally::finish(&tally, &floors, true, Some(&timings))
}
