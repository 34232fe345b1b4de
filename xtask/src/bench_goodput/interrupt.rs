//! Ctrl-C (SIGINT) and SIGTERM during a run: taken by a thread of their own, so that the
//! run's waits end with an error and its jobs are dropped (agents, tasks and namespaces
//! gone) instead of the process dying with them still running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};

/// Set once a signal came.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Blocks SIGINT and SIGTERM in this thread (and the threads it starts from now on) and
/// takes them on a thread of their own. Call first, before any thread starts. Children are
/// started with an empty mask (std resets it), so they take the signals as usual.
pub(super) fn arm() -> Result<(), String> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set.thread_block()
        .map_err(|e| format!("cannot block SIGINT and SIGTERM: {e}"))?;
    std::thread::spawn(move || {
        if let Ok(signal) = set.wait() {
            eprintln!("xtask: {signal}: stopping the jobs and removing the hosts");
            STOPPED.store(true, Ordering::SeqCst);
        }
    });
    Ok(())
}

/// An error once a signal came.
pub(super) fn check() -> Result<(), String> {
    if STOPPED.load(Ordering::SeqCst) {
        Err("interrupted".into())
    } else {
        Ok(())
    }
}

/// Sleeps `duration`, ending early with an error when a signal comes.
pub(super) fn sleep(duration: Duration) -> Result<(), String> {
    let deadline = Instant::now() + duration;
    loop {
        check()?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
