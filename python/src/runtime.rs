//! Running the resolvers' async methods from Python: on a current-thread tokio runtime made
//! for the call, with the GIL released so other Python threads run meanwhile.

use std::future::Future;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Runs the future `make` returns to completion, the GIL released.
pub(crate) fn block_on<F, T>(py: Python<'_>, make: impl FnOnce() -> F + Send) -> PyResult<T>
where
    F: Future<Output = T>,
    T: Send,
{
    py.detach(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start an async runtime: {e}")))?;
        Ok(runtime.block_on(make()))
    })
}
