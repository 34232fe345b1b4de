//! Test support: bounds on the processes a test or a developer task runs, so that nothing waits
//! on one forever and nothing quotes all it wrote.
//!
//! A helper that runs a process waits for it with [`wait_exit`], which gives up at a deadline,
//! and when it gives up on the process (it exited, it did not finish in time) says why with
//! what the process wrote last: [`tail`] keeps the last lines of that text, indented under the
//! message, and says how many came before. One home for the helpers that run processes this
//! way: etcd-cluster (its members, etcdctl's runs) and xtask (the Slurm daemons, the commands
//! its tasks run).
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//!
//! let mut child = Command::new("true").spawn()?;
//! let status = bounded_process::wait_exit(&mut child, Duration::from_secs(10), Duration::from_millis(10));
//! assert!(status.is_some_and(|status| status.success()));
//!
//! let log = "starting\nlistening on :2379\npanic: address in use\n";
//! assert_eq!(
//!     bounded_process::tail(log, 2),
//!     "    ... (1 earlier lines)\n    listening on :2379\n    panic: address in use\n",
//! );
//! # Ok::<(), std::io::Error>(())
//! ```

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits up to `timeout` for `child` to exit, looking every `poll`; `None` when it still runs.
/// A child gone in a way that cannot be observed counts as exited.
pub fn wait_exit(child: &mut Child, timeout: Duration, poll: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            // The child is gone in a way we cannot observe: treat it as exited.
            Err(_) => return child.wait().ok(),
            Ok(None) if Instant::now() >= deadline => return None,
            Ok(None) => std::thread::sleep(poll),
        }
    }
}

/// The last `lines` lines of `text`, indented, with a note when lines were left off.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    let mut shown = String::new();
    if all.is_empty() {
        shown.push_str("    (empty)\n");
    }
    if start > 0 {
        shown.push_str(&format!("    ... ({start} earlier lines)\n"));
    }
    for line in &all[start..] {
        shown.push_str("    ");
        shown.push_str(line);
        shown.push('\n');
    }
    shown
}

#[cfg(test)]
mod tests {
    use std::process::Command;
    use std::time::Duration;

    use super::{tail, wait_exit};

    #[test]
    fn empty_text_says_so() {
        assert_eq!(tail("", 5), "    (empty)\n");
    }

    #[test]
    fn short_text_is_whole_without_a_note() {
        assert_eq!(tail("a\nb", 5), "    a\n    b\n");
    }

    #[test]
    fn a_child_that_outlives_the_timeout_is_left_running() {
        let mut child = Command::new("sleep").arg("10").spawn().expect("sleep runs");
        let waited = wait_exit(
            &mut child,
            Duration::from_millis(50),
            Duration::from_millis(10),
        );
        assert!(waited.is_none());
        child.kill().expect("the child still runs");
        let _ = child.wait();
    }
}
