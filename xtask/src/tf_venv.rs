//! The TensorFlow 2.21 virtual environment the differential tests run real TensorFlow in.
//!
//! Lives at `target/tf-venv`; tests find its python through `TFCLUSTER_PYTHON`, which
//! `cargo xtask test` sets.

use std::path::PathBuf;
use std::process::Command;

use crate::workspace;

/// The TensorFlow release every differential test compares against.
const TENSORFLOW: &str = "tensorflow-cpu==2.21.0";

/// TensorFlow's python: `TFCLUSTER_PYTHON` when set (as the tests read it), else the venv's,
/// made by [`ensure`] when missing.
pub(crate) fn python() -> Result<PathBuf, String> {
    match std::env::var_os("TFCLUSTER_PYTHON") {
        Some(python) if has_tensorflow(&PathBuf::from(&python)) => Ok(python.into()),
        Some(python) => Err(format!(
            "TFCLUSTER_PYTHON={} cannot import tensorflow 2.21",
            PathBuf::from(python).display()
        )),
        None => ensure(),
    }
}

/// Creates the venv when it is missing or lacks TensorFlow; returns its python.
pub(crate) fn ensure() -> Result<PathBuf, String> {
    let venv = workspace::root().join("target/tf-venv");
    let python = venv.join("bin/python");
    if has_tensorflow(&python) {
        return Ok(python);
    }
    workspace::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    workspace::run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(TENSORFLOW),
    )?;
    if has_tensorflow(&python) {
        Ok(python)
    } else {
        Err(format!(
            "{} cannot import tensorflow 2.21 after install",
            python.display()
        ))
    }
}

fn has_tensorflow(python: &PathBuf) -> bool {
    Command::new(python)
        .args([
            "-c",
            "import tensorflow as tf; assert tf.__version__.startswith('2.21.')",
        ])
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .output()
        .is_ok_and(|out| out.status.success())
}
