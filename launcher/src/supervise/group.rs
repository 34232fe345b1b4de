//! Processes started each in a process group of its own, signalled as a group, and their
//! exit status passed on as a shell would.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// Starts `command` as the leader of a new process group, and returns it with its group. A
/// group of its own means a terminal's Ctrl-C reaches it once (through its supervisor)
/// rather than twice, and a signal sent to the group also reaches what it started (a
/// shell's python, TensorFlow's helpers), so stopping it leaves nothing behind. It inherits
/// no withheld variable ([`withhold_env`](crate::withhold_env)).
pub fn spawn_group(command: &mut Command) -> std::io::Result<(Child, Group)> {
    let child = crate::withheld_env::withhold(command)
        .process_group(0)
        .spawn()?;
    // A child that was spawned has a pid until it is reaped, and it is not reaped yet.
    let pid = child.id().unwrap_or_default();
    let group = Group(Pid::from_raw(i32::try_from(pid).unwrap_or_default()));
    Ok((child, group))
}

/// The process group of a started command (its id is the command's pid).
#[derive(Clone, Copy, Debug)]
pub struct Group(Pid);

impl Group {
    /// Sends `signal` to every process of the group. A group that is already gone is no
    /// error: stopping is idempotent.
    pub fn signal(self, signal: Signal) {
        if self.0.as_raw() <= 0 {
            return;
        }
        if let Err(e) = killpg(self.0, signal)
            && e != nix::errno::Errno::ESRCH
        {
            tracing::warn!(group = self.0.as_raw(), %signal, error = %e, "cannot signal a process group");
        }
    }
}

/// The exit status a shell reports for `status`: the code, or 128 plus the signal that
/// ended the process.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_signals_become_shell_statuses() {
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    }
}
