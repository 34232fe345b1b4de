//! Running the resolvers' async calls from synchronous tests (proptest bodies, batch loops).

use std::future::Future;

/// Runs `future` to completion on a current-thread runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}
