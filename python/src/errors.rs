//! Rust errors as Python exceptions, each with its whole chain of causes on one line.

use std::error::Error;

use cluster_spec::__private::error_chain::Chain;
use pyo3::PyErr;
use pyo3::exceptions::{PyRuntimeError, PyValueError};

/// `ValueError`: the caller's input is invalid.
pub(crate) fn invalid_input(error: &(dyn Error + 'static)) -> PyErr {
    PyValueError::new_err(Chain(error).to_string())
}

/// A resolver's error: `ValueError` when the caller asked for a task the cluster does not have
/// (TensorFlow's `No such job in cluster`), else `RuntimeError`, the environment does not
/// resolve.
pub(crate) fn resolver(error: cluster_resolver::Error) -> PyErr {
    use cluster_resolver::Error as E;
    use cluster_spec::Error as S;
    match &error {
        E::Spec(S::NoSuchJob { .. } | S::NoSuchTask { .. }) | E::TfConfigNoTask { .. } => {
            invalid_input(&error)
        }
        _ => PyRuntimeError::new_err(Chain(&error).to_string()),
    }
}
