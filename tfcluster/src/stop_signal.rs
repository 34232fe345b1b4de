//! SIGINT and SIGTERM to this process: what stops `serve` and `up --keep`, and what `run`
//! passes on to the commands it started.

use anyhow::anyhow;
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
        async fn next(signal: &mut Option<Signal>) {
            match signal {
                Some(signal) => {
                    if signal.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = next(&mut self.interrupt) => Sig::SIGINT,
            () = next(&mut self.terminate) => Sig::SIGTERM,
        }
    }
}

/// How a launch that `signal` stopped ends: with the status a shell gives a process killed by
/// it (128 plus the signal), saying `what` was stopped (`every task`, `every local task`).
pub(crate) fn stopped(signal: Sig, what: &str) -> Failure {
    let code = u8::try_from(128 + signal as i32).unwrap_or(1);
    Failure::new(anyhow!("stopped by {signal}: {what} was stopped"), code)
}
