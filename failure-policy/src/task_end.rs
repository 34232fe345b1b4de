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

    /// Whether the task ended as TensorFlow's `PreemptionCheckpointHandler` ends it after
    /// saving on a preemption notice: exit status 42 ([`PLANNED_EXIT_CODES`]; 143 on GCE's
    /// maintenance events). A planned restart, not a failure: it counts against no bound.
    pub fn is_planned(&self) -> bool {
        matches!(self, Self::Exited(code) if PLANNED_EXIT_CODES.contains(code))
    }
}

/// The exit statuses of a task that saved and exited on a preemption notice: TensorFlow's
/// `PreemptionCheckpointHandler` exits with 42 off GCP and 143 on GCE maintenance events
/// (`tensorflow/python/distribute/failure_handling/failure_handling.py`).
pub const PLANNED_EXIT_CODES: [i32; 2] = [42, 143];

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
        assert!(TaskEnd::Exited(42).is_planned() && TaskEnd::Exited(143).is_planned());
        assert!(!TaskEnd::Exited(1).is_planned() && !TaskEnd::Signaled(15).is_planned());
        assert_eq!(TaskEnd::Exited(3).to_string(), "exited with status 3");
        assert_eq!(TaskEnd::Signaled(9).to_string(), "was killed by signal 9");
        let hung = TaskEnd::Hung {
            quiet: Duration::from_secs(30),
        };
        assert_eq!(hung.to_string(), "hung: no progress for 30s");
    }
}
