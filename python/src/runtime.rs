//! Running the resolvers' async methods from Python: on the module's one tokio runtime, with
//! the GIL released so other Python threads run meanwhile.
//!
//! One runtime for the process, not one per call: a resolver keeps what it connected (the
//! Kubernetes client, whose request buffer is a task on the runtime that made it), so a
//! runtime dropped after the call that made them would leave the next call a dead client
//! ("buffer's worker closed unexpectedly"). One worker thread runs such tasks; each call
//! blocks its own thread on its future.

use std::future::Future;
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// Runs the future `make` returns to completion, the GIL released.
pub(crate) fn block_on<F, T>(py: Python<'_>, make: impl FnOnce() -> F + Send) -> PyResult<T>
where
    F: Future<Output = T>,
    T: Send,
{
    let runtime = runtime()?;
    py.detach(|| Ok(runtime.block_on(make())))
}

/// The module's runtime, made at its first use.
fn runtime() -> PyResult<&'static Runtime> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let made = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("tfcluster-runtime")
        .enable_all()
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start an async runtime: {e}")))?;
    // Two first calls at once: one runtime is kept, the other dropped unused.
    Ok(RUNTIME.get_or_init(|| made))
}
