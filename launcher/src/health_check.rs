//! [`HealthCheck`]: a command a host must pass before it joins a job's round (`run --rdzv
//! --health-check CMD`), e.g. `nvidia-smi`, or a short TensorFlow op on the GPU. It runs
//! under `sh -c`, in a process group of its own, with a deadline: a check that does not end
//! in time is killed (its group) and has failed. Its output is kept, the end of it named in
//! the failure.
//!
//! ```
//! use std::time::Duration;
//!
//! use launcher::HealthCheck;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let ok = HealthCheck::new("test -d /", Duration::from_secs(5));
//! assert!(ok.run().await.is_ok());
//! let bad = HealthCheck::new("echo 'no GPU found' >&2; exit 3", Duration::from_secs(5));
//! let failed = bad.run().await.unwrap_err();
//! assert_eq!(
//!     failed.to_string(),
//!     "health check `echo 'no GPU found' >&2; exit 3` exited with status 3: no GPU found"
//! );
//! let slow = HealthCheck::new("sleep 30", Duration::from_millis(200));
//! let failed = slow.run().await.unwrap_err();
//! assert_eq!(failed.to_string(), "health check `sleep 30` did not end within 200ms");
//! # }
//! ```

use std::fmt;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::Command;

use crate::TaskEnd;
use crate::supervise::{spawn_group, task_end};

/// The most bytes of a check's output named in its failure.
const MAX_TAIL: usize = 512;

/// A command run with `sh -c` before each join, with a deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    command: String,
    deadline: Duration,
}

/// Why a host failed its health check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HealthCheckFailed {
    /// It ran and failed.
    #[error("health check `{command}` {end}{}", tail_text(.tail))]
    Failed {
        /// The command.
        command: String,
        /// How it ended.
        end: TaskEnd,
        /// The end of its output (stdout and stderr).
        tail: String,
    },
    /// It ran past its deadline and was killed.
    #[error("health check `{command}` did not end within {deadline:?}")]
    TimedOut {
        /// The command.
        command: String,
        /// Its deadline.
        deadline: Duration,
    },
    /// It could not be started (no shell, no process left).
    #[error("health check `{command}` cannot start: {error}")]
    Start {
        /// The command.
        command: String,
        /// Why.
        error: String,
    },
}

fn tail_text(tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    }
}

impl HealthCheck {
    /// `command`, run with `sh -c`, failed when it exits non-zero or runs past `deadline`.
    pub fn new(command: impl Into<String>, deadline: Duration) -> Self {
        Self {
            command: command.into(),
            deadline,
        }
    }

    /// The command.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Runs the check once; its output is kept, not shown.
    ///
    /// # Errors
    ///
    /// [`HealthCheckFailed`]: it exited non-zero or was killed by a signal, ran past its
    /// deadline (its process group is then killed), or could not start.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped, its process group is killed.
    pub async fn run(&self) -> Result<(), HealthCheckFailed> {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let (child, group) = spawn_group(&mut command).map_err(|e| HealthCheckFailed::Start {
            command: self.command.clone(),
            error: e.to_string(),
        })?;
        // Whatever ends the wait (a deadline, a drop), nothing the check started outlives it.
        let _kill = KillOnDrop(group);
        let output = match tokio::time::timeout(self.deadline, child.wait_with_output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => {
                return Err(HealthCheckFailed::Start {
                    command: self.command.clone(),
                    error: e.to_string(),
                });
            }
            Err(_) => {
                return Err(HealthCheckFailed::TimedOut {
                    command: self.command.clone(),
                    deadline: self.deadline,
                });
            }
        };
        if output.status.success() {
            return Ok(());
        }
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        let mut start = text.len().saturating_sub(MAX_TAIL);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        Err(HealthCheckFailed::Failed {
            command: self.command.clone(),
            end: task_end(&Ok(output.status)),
            tail: text[start..].to_owned(),
        })
    }
}

impl fmt::Display for HealthCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` (within {:?})", self.command, self.deadline)
    }
}

/// Kills a process group when dropped.
struct KillOnDrop(crate::supervise::Group);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(Signal::SIGKILL);
    }
}
