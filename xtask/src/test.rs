//! `cargo xtask test`: every check CI runs, in order, stopping at the first failure.
//!
//! It installs what the tests need first (the TensorFlow 2.21 venv, Debian's Slurm and etcd), so
//! a fresh machine runs the same suite as a developer's.

use std::process::Command;

use crate::{codegen, etcd, features, interop, python, slurm, tf_venv, workspace};

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
    slurm::ensure_installed()?;
    etcd::ensure_installed()?;
    workspace::run(Command::new("cargo").args(["fmt", "--all", "--check"]))?;
    workspace::run(Command::new("cargo").args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    features::check()?;
    codegen::run(true)?;
    // Broken intra-doc links and bad doc markup fail like any other warning.
    workspace::run(
        Command::new("cargo")
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    features::docs_rs()?;
    // The interop tests run once, as their own step below.
    workspace::run(
        Command::new("cargo")
            .args([
                "test",
                "--workspace",
                "--all-features",
                "--",
                "--skip",
                interop::FILTER,
            ])
            .env("TFCLUSTER_PYTHON", &python),
    )?;
    features::test()?;
    interop::run()?;
    // The Python package: its wheel built and installed into the TF venv, its pytest suite.
    python::run()?;
    // The real Slurm cluster last: it needs the daemons, which the unit tests do not.
    slurm::run(false)
}
