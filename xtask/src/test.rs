//! `cargo xtask test`: every check CI runs, in order, stopping at the first failure.

use std::process::Command;

use crate::{codegen, tf_venv, workspace};

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
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
    codegen::run(true)?;
    workspace::run(
        Command::new("cargo")
            .args(["test", "--workspace", "--all-features"])
            .env("TFCLUSTER_PYTHON", &python),
    )
}
