//! Closing a whole connection (after `close()` or a full reconnect): its contexts, then its
//! local server; and running such closings so that a caller who stops waiting does not stop
//! them.

use std::sync::Arc;

use super::Deadline;
use super::close::close_contexts;
use super::connection::Live;
use crate::error::{Error, Stage, TaskFailure};

/// Runs `work` on a task of its own and waits for it, so that dropping the wait does not
/// stop the work; `None` when the runtime is shutting down and the task was cancelled.
pub(super) async fn detached<F>(work: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match tokio::spawn(work).await {
        Ok(output) => Some(output),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => None,
    }
}

/// Closes a connection's contexts and, when no newer connection shares it, its local server.
pub(super) async fn close_all(mut live: Live) -> Result<(), Error> {
    if let Some(handle) = live.keep_alive.take() {
        handle.abort();
    }
    let c = &live.connection;
    let tasks = c.links();
    let total = tasks.len();
    let rpc = c.options.rpc_timeout;
    let deadline = Deadline::new(rpc, rpc, c.options.max_in_flight);
    let failures: Vec<TaskFailure> =
        close_contexts(&deadline, c.context_id, c.view_id, tasks).await;
    let server = c.local.server.clone();
    drop(live);
    if let Ok(server) = Arc::try_unwrap(server) {
        let _ = server.shutdown().await;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Tasks {
            stage: Stage::Close,
            total,
            failures,
        })
    }
}
