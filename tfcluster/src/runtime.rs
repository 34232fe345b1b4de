//! What a command runs on: the tokio runtime, and the open-file limit raised at start.

use anyhow::Context as _;

use crate::failure::Failure;

/// A tokio runtime for one command (two worker threads: enough for loopback clusters).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(Failure::from)
}

/// Raises the soft limit on open files to the hard one, as servers commonly do: a task server
/// holds a descriptor per client connection, and a connect one per task, and the usual soft
/// limit (1,024) is far below what a large cluster needs (or what the hard limit allows).
pub(crate) fn raise_open_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(error) => tracing::debug!(%error, "could not raise the open-file limit"),
    }
}
