//! Running a blocking GPU query from async code under a deadline, whatever the runtime.
//!
//! The query (NVML's calls, or waiting for `nvidia-smi`) runs on a thread of its own, so no
//! runtime worker ever blocks on a driver; the future resolves with its answer, or with
//! [`Error::Timeout`] at the deadline. A plain thread rather than tokio's `spawn_blocking`:
//! this crate's async functions run on any executor (the Python skin drives them too), and
//! `spawn_blocking` panics outside a tokio runtime. A query stuck in the driver past the
//! deadline keeps its thread until the driver returns; nothing waits for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use super::Error;

/// The answer, once the query or the deadline gave one, and who waits for it.
struct Slot<T> {
    answer: Option<Result<T, Error>>,
    /// Set once the answer was taken or the future dropped: nothing to fill any more.
    closed: bool,
    waker: Option<Waker>,
    /// The thread that waits for the deadline, to wake when the answer comes first.
    watcher: Option<thread::Thread>,
}

type Shared<T> = Arc<Mutex<Slot<T>>>;

/// Fills `slot` unless it already holds an answer; returns whether it did.
fn fill<T>(slot: &Shared<T>, answer: Result<T, Error>) -> bool {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.answer.is_some() || slot.closed {
        return false;
    }
    slot.answer = Some(answer);
    if let Some(waker) = slot.waker.take() {
        waker.wake();
    }
    true
}

/// Runs `query` on its own thread; resolves with its answer, or with [`Error::Timeout`]
/// naming `what` once `timeout` has passed.
pub(crate) fn run<T: Send + 'static>(
    what: &str,
    timeout: Duration,
    query: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> impl Future<Output = Result<T, Error>> + Send {
    let slot: Shared<T> = Arc::new(Mutex::new(Slot {
        answer: None,
        closed: false,
        waker: None,
        watcher: None,
    }));
    // The query's thread answers the future directly; the watcher, started beside it, only
    // gives up at the deadline, so it is on no path but a timeout's.
    let answered = slot.clone();
    let watched = slot.clone();
    let worker = thread::Builder::new()
        .name("gpu-query".to_owned())
        .spawn(move || {
            let answer = query();
            if fill(&answered, answer) {
                let watcher = answered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .watcher
                    .take();
                if let Some(watcher) = watcher {
                    watcher.unpark();
                }
            }
        });
    if let Err(e) = worker {
        fill(&slot, Err(Error::Thread(e)));
        return Answer { slot };
    }
    let what = what.to_owned();
    let watcher = thread::Builder::new()
        .name("gpu-deadline".to_owned())
        .spawn(move || {
            let deadline = Instant::now() + timeout;
            loop {
                {
                    let mut slot = watched.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.answer.is_some() || slot.closed {
                        return;
                    }
                    slot.watcher = Some(thread::current());
                }
                let now = Instant::now();
                if now >= deadline {
                    fill(&watched, Err(Error::Timeout { what, timeout }));
                    return;
                }
                thread::park_timeout(deadline - now);
            }
        });
    if let Err(e) = watcher {
        // Without a watcher there is no deadline: better no answer than a hang.
        fill(&slot, Err(Error::Thread(e)));
    }
    Answer { slot }
}

/// The future [`run`] returns.
struct Answer<T> {
    slot: Shared<T>,
}

impl<T> Future for Answer<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.answer.take() {
            Some(answer) => {
                slot.closed = true;
                Poll::Ready(answer)
            }
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Answer<T> {
    fn drop(&mut self) {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.closed = true;
        slot.answer = None;
        slot.waker = None;
        // The watcher need not wait for the deadline of a question nobody waits for.
        if let Some(watcher) = slot.watcher.take() {
            watcher.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `future` to completion on this thread, parking between polls.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct Unpark(thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            thread::park();
        }
    }

    #[test]
    fn answers_with_the_query() {
        let out = block_on(run("q", Duration::from_secs(5), || Ok(7)));
        assert_eq!(out.unwrap(), 7);
    }

    #[test]
    fn gives_up_at_the_deadline_without_waiting_for_the_query() {
        let started = Instant::now();
        let out = block_on(run("NVML", Duration::from_millis(100), || {
            thread::sleep(Duration::from_secs(3));
            Ok(1)
        }));
        assert!(started.elapsed() < Duration::from_secs(2));
        let e = out.unwrap_err().to_string();
        assert!(e.starts_with("NVML did not answer within 100ms"), "{e}");
    }
}
