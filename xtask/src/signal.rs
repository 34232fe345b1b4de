//! Signalling the processes a benchmark started (agents, tasks, victims).

use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// Sends `signal` to process `pid`; one already gone is no error.
pub(crate) fn signal(pid: u32, signal: Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
    }
}
