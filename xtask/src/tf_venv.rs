//! The TensorFlow 2.21 virtual environment the differential tests run real TensorFlow in.
//!
//! Lives at `target/tf-venv`; tests find its python through `TFCLUSTER_PYTHON`, which
//! `cargo xtask test` sets.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::venv::{self, Venv};

/// The TensorFlow release every differential test compares against.
const TENSORFLOW: &str = "tensorflow-cpu==2.21.0";

/// What the venv gets from pip: TensorFlow, and ml_dtypes held at 0.6.0 (TensorFlow 2.21
/// takes any of `>=0.5.1,<1`). 0.7.0, what pip picks by itself, spends 2 CPU-seconds of
/// every `import tensorflow` registering its numpy loops (8.1 s against 5.8 s, measured on
/// this project's 2-core machine), and the test command imports TensorFlow hundreds of
/// times. Its types and behaviour are the same for what the tests use (bfloat16 tensors).
pub(crate) const INSTALL: [&str; 2] = [TENSORFLOW, "ml_dtypes==0.6.0"];

/// Python that fails unless TensorFlow 2.21 imports: all a `TFCLUSTER_PYTHON` of the user's
/// own must pass (its ml_dtypes is its own business: slower, not wrong).
macro_rules! tensorflow_check {
    () => {
        "import tensorflow as tf; assert tf.__version__.startswith('2.21.')"
    };
}

const VENV: Venv<'static> = Venv {
    name: "tf-venv",
    check: concat!(
        tensorflow_check!(),
        "; import ml_dtypes; assert ml_dtypes.__version__ == '0.6.0'"
    ),
};

/// TensorFlow's python: `TFCLUSTER_PYTHON` when set (as the tests read it), else the venv's,
/// made by [`ensure`] when missing. Checked once a run of xtask (a check imports TensorFlow:
/// seconds), however many suites ask.
pub(crate) fn python() -> Result<PathBuf, String> {
    static CHECKED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CHECKED
        .get_or_init(|| match std::env::var_os("TFCLUSTER_PYTHON") {
            Some(python) if venv::passes(python.as_ref(), tensorflow_check!()) => Ok(python.into()),
            Some(python) => Err(format!(
                "TFCLUSTER_PYTHON={} cannot import tensorflow 2.21",
                PathBuf::from(python).display()
            )),
            None => ensure(),
        })
        .clone()
}

/// Creates the venv when it is missing or lacks TensorFlow; returns its python. Once a run of
/// xtask, as [`python`].
pub(crate) fn ensure() -> Result<PathBuf, String> {
    static MADE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    MADE.get_or_init(|| VENV.ensure(&[&INSTALL])).clone()
}
