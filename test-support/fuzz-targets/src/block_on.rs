//! Running a resolver's future without a runtime.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Runs `future` to completion by polling it once with a no-op waker.
///
/// The resolvers fuzzed here (TF_CONFIG, SageMaker, Slurm) read only their `Env` and never
/// await anything, so their futures are ready on the first poll. A future that is still pending
/// would mean a resolver started waiting on I/O, which the fuzz run should report: it panics.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a resolver future was not ready on its first poll"),
    }
}
