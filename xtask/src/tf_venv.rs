//! The TensorFlow 2.21 virtual environment the differential tests run real TensorFlow in.
//!
//! Lives at `target/tf-venv`; tests find its python through `TFCLUSTER_PYTHON`, which
//! `cargo xtask test` sets.

use std::path::PathBuf;

use crate::venv::Venv;

/// The TensorFlow release every differential test compares against.
pub(crate) const TENSORFLOW: &str = "tensorflow-cpu==2.21.0";

const VENV: Venv<'static> = Venv {
    name: "tf-venv",
    check: "import tensorflow as tf; assert tf.__version__.startswith('2.21.')",
};

/// TensorFlow's python: `TFCLUSTER_PYTHON` when set (as the tests read it), else the venv's,
/// made by [`ensure`] when missing.
pub(crate) fn python() -> Result<PathBuf, String> {
    match std::env::var_os("TFCLUSTER_PYTHON") {
        Some(python) if VENV.ready(&PathBuf::from(&python)) => Ok(python.into()),
        Some(python) => Err(format!(
            "TFCLUSTER_PYTHON={} cannot import tensorflow 2.21",
            PathBuf::from(python).display()
        )),
        None => ensure(),
    }
}

/// Creates the venv when it is missing or lacks TensorFlow; returns its python.
pub(crate) fn ensure() -> Result<PathBuf, String> {
    VENV.ensure(&[&[TENSORFLOW]])
}
