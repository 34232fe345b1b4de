//! [`TaskEnd`]: how a supervised task ended, as its launcher reports it.

use std::fmt;
use std::time::Duration;

/// How a task ended: its exit status, the signal that ended it, the watchdog's verdict, or
/// why it could not be run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskEnd {
    /// It exited with this status (0 is success).
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It could not be started or watched (the program is missing, ...).
    Error(String),
    /// It was hung: it showed no progress (no line of output, no touch of its progress
    /// file) for `quiet`, the watchdog's period, and was killed (after its Python stack was
    /// asked for: the end of its stderr holds it).
    Hung {
        /// How long it was quiet: the watchdog's period.
        quiet: Duration,
    },
}

impl TaskEnd {
    /// Whether the task succeeded (exit status 0).
    pub fn success(&self) -> bool {
        matches!(self, Self::Exited(0))
    }
}

impl fmt::Display for TaskEnd {
    /// `exited with status 1`, `was killed by signal 9`, `could not run: …`,
    /// `hung: no progress for 30s`: the words a failure report puts after the task's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with status {code}"),
            Self::Signaled(signal) => write!(f, "was killed by signal {signal}"),
            Self::Error(error) => write!(f, "could not run: {error}"),
            Self::Hung { quiet } => write!(f, "hung: no progress for {quiet:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_reads_as_a_failure_report_says_it() {
        assert!(TaskEnd::Exited(0).success());
        assert!(!TaskEnd::Signaled(9).success());
        assert_eq!(TaskEnd::Exited(3).to_string(), "exited with status 3");
        assert_eq!(TaskEnd::Signaled(9).to_string(), "was killed by signal 9");
        let hung = TaskEnd::Hung {
            quiet: Duration::from_secs(30),
        };
        assert_eq!(hung.to_string(), "hung: no progress for 30s");
    }
}
