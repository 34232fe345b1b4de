//! SIGINT and SIGTERM to this process: what stops `serve` and `up --keep`, and what `run`
//! passes on to the commands it started.

use std::pin::Pin;
use std::task::{Context, Poll};

use anyhow::anyhow;
use futures_util::Stream;
use nix::sys::signal::Signal as Sig;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::failure::Failure;

/// SIGINT and SIGTERM, caught from the moment this is made (so a signal that arrives right
/// after the "serving" line, or while a command starts, is not lost).
pub(crate) struct Stop {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
}

impl Stop {
    pub(crate) fn install() -> Self {
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Resolves on the first of the two signals.
    pub(crate) async fn wait(mut self) {
        self.next().await;
    }

    /// The next SIGINT or SIGTERM; call again for the one after.
    pub(crate) async fn next(&mut self) -> Sig {
        std::future::poll_fn(|cx| self.poll_signal(cx)).await
    }

    /// The next signal when one came. A signal whose listener could not be made, or whose
    /// listener ended, never comes.
    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Sig> {
        for (listener, sig) in [
            (&mut self.interrupt, Sig::SIGINT),
            (&mut self.terminate, Sig::SIGTERM),
        ] {
            if let Some(signal) = listener {
                match signal.poll_recv(cx) {
                    Poll::Ready(Some(())) => return Poll::Ready(sig),
                    Poll::Ready(None) => *listener = None,
                    Poll::Pending => {}
                }
            }
        }
        Poll::Pending
    }
}

/// Every SIGINT and SIGTERM, in order, as the elastic agent takes its stop; it never ends.
impl Stream for Stop {
    type Item = Sig;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Sig>> {
        self.poll_signal(cx).map(Some)
    }
}

/// How a launch that `signal` stopped ends: with the status a shell gives a process killed by
/// it (128 plus the signal), saying `what` was stopped (`every task`, `every local task`).
pub(crate) fn stopped(signal: Sig, what: &str) -> Failure {
    let code = u8::try_from(128 + signal as i32).unwrap_or(1);
    Failure::new(anyhow!("stopped by {signal}: {what} was stopped"), code)
}
