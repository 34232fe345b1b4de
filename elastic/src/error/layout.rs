//! [`LayoutError`]: why a layout (`--layout chief=1,ps=2`) does not parse, and at which byte.

use cluster_spec::__private::quote::quote;
use cluster_spec::job_counts::JobCountsError;

/// A layout that is not `JOB=COUNT,...` over TensorFlow's non-worker jobs, from
/// [`Layout`](crate::Layout)'s `FromStr`.
///
/// The message quotes the input: `invalid layout "chief=2": TensorFlow allows one chief task,
/// found 2`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid layout {}: {kind}", quote(.input, *.pos))]
#[non_exhaustive]
pub struct LayoutError {
    /// The whole layout as given.
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub pos: usize,
    /// What is wrong there.
    pub kind: LayoutErrorKind,
}

/// Why a layout is invalid; carried by [`LayoutError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutErrorKind {
    /// An entry is not a `JOB=COUNT` with a valid job name and count, or names a job twice
    /// (cluster-spec's [`job_counts`](cluster_spec::job_counts) parser).
    #[error(transparent)]
    Entry(JobCountsError),
    /// A job the layout may not place: only `chief`, `ps` and `evaluator` are placed; every
    /// other task is a worker.
    #[error(
        "job {job:?} at byte {pos} cannot be placed: a layout places chief, ps or evaluator \
         tasks, and every other task is a worker"
    )]
    UnknownJob {
        /// The job named.
        job: String,
        /// Its first byte.
        pos: usize,
    },
    /// `worker` is named: workers are the tasks the layout leaves.
    #[error("worker at byte {pos}: workers are the tasks the layout leaves; leave it out")]
    Worker {
        /// Its first byte.
        pos: usize,
    },
    /// More than one chief or evaluator (TensorFlow's multi-worker rules allow one).
    #[error("TensorFlow allows one {job} task, found {count}")]
    MoreThanOne {
        /// `chief` or `evaluator`.
        job: String,
        /// The count given.
        count: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_quotes_input() {
        let e = LayoutError {
            input: "chief=2".into(),
            pos: 6,
            kind: LayoutErrorKind::MoreThanOne {
                job: "chief".into(),
                count: 2,
            },
        };
        assert_eq!(
            e.to_string(),
            "invalid layout \"chief=2\": TensorFlow allows one chief task, found 2"
        );
    }
}
