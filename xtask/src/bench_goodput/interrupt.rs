//! Ctrl-C (SIGINT) and SIGTERM during a run: taken by a thread of their own, so that the
//! run's waits end with an error and its jobs are dropped (agents, tasks and namespaces
//! gone) instead of the process dying with them still running.

use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};

/// Set once a signal came.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Blocks SIGINT and SIGTERM in this thread (and the threads it starts from now on) and
/// takes them on a thread of their own. Call first, before any thread starts. A child
/// inherits its spawner's mask (std's spawn leaves it as it is, and an agent's tasks inherit
/// the agent's): start them with [`spawn`].
pub(super) fn arm() -> Result<(), String> {
    let set = taken();
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

/// The signals [`arm`] takes.
fn taken() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set
}

/// Spawns `command` from a thread of its own that has SIGINT and SIGTERM unblocked, so that
/// the child and its children take them as usual: an agent's tasks must get the SIGTERM of a
/// clean stop (TensorFlow's PreemptionCheckpointHandler saves on it). One that comes to
/// xtask in the moment that thread lives ends xtask as it would have before [`arm`].
pub(super) fn spawn(command: &mut Command) -> std::io::Result<Child> {
    std::thread::scope(|s| {
        s.spawn(|| {
            taken().thread_unblock().map_err(std::io::Error::from)?;
            command.spawn()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the spawning thread panicked")))
    })
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
