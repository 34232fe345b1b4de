//! [`Layout`]: which jobs other than `worker` a round's first tasks hold (`--layout
//! chief=1,ps=2`).

use std::fmt;
use std::str::FromStr;

use cluster_spec::job_counts::{self, JobCountsError};

pub use crate::error::layout::{LayoutError, LayoutErrorKind};

/// The jobs a layout may place, TensorFlow's multi-worker jobs other than `worker`.
const PLACED_JOBS: [&str; 3] = ["chief", "ps", "evaluator"];

/// Jobs placed on a round's first tasks, in order; every other task is a `worker`.
///
/// The default (and the empty string) places nothing: every task is a worker, the cluster of
/// `MultiWorkerMirroredStrategy`. `chief=1,ps=2` puts the chief on task 0 and two parameter
/// servers on tasks 1 and 2 (so on the first nodes), the cluster of
/// `ParameterServerStrategy`. Jobs are `chief` (at most 1), `ps` and `evaluator` (at most 1),
/// as TensorFlow's multi-worker rules allow.
///
/// ```
/// use elastic::Layout;
///
/// let layout: Layout = "chief=1,ps=2".parse()?;
/// assert_eq!(layout.jobs(), [("chief", 1), ("ps", 2)]);
/// assert_eq!(layout.placed_tasks(), 3);
/// assert_eq!(layout.to_string(), "chief=1,ps=2");
/// assert!("".parse::<Layout>()?.jobs().is_empty());
/// assert_eq!(
///     "ps=2,worker=4".parse::<Layout>().unwrap_err().to_string(),
///     "invalid layout \"ps=2,worker=4\": worker at byte 5: workers are the tasks the layout \
///      leaves; leave it out"
/// );
/// # Ok::<(), elastic::LayoutError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Layout {
    jobs: Vec<(String, u32)>,
}

impl Layout {
    /// Every task a worker.
    pub fn workers_only() -> Self {
        Self::default()
    }

    /// The placed jobs and their task counts, in order.
    pub fn jobs(&self) -> Vec<(&str, u32)> {
        self.jobs.iter().map(|(j, n)| (j.as_str(), *n)).collect()
    }

    /// How many tasks the layout places (the rest are workers).
    pub fn placed_tasks(&self) -> u64 {
        self.jobs.iter().map(|(_, n)| u64::from(*n)).sum()
    }

    /// Whether a chief is placed (then the chief's success ends the job, else worker 0's).
    pub fn has_chief(&self) -> bool {
        self.jobs.iter().any(|(j, _)| j == "chief")
    }
}

impl FromStr for Layout {
    type Err = LayoutError;

    /// `JOB=COUNT` entries separated by commas (cluster-spec's [`job_counts`] parser); the
    /// empty string is [`Layout::workers_only`].
    fn from_str(input: &str) -> Result<Self, LayoutError> {
        let jobs = job_counts::parse(input, |entry| {
            let (job, pos) = (entry.job.to_owned(), entry.pos);
            if job == "worker" {
                return Err(At(pos, LayoutErrorKind::Worker { pos }));
            }
            if !PLACED_JOBS.contains(&job.as_str()) {
                return Err(At(pos, LayoutErrorKind::UnknownJob { job, pos }));
            }
            if job != "ps" && entry.count > 1 {
                let count = entry.count;
                let kind = LayoutErrorKind::MoreThanOne { job, count };
                return Err(At(entry.count_pos, kind));
            }
            Ok(())
        })
        .map_err(|At(pos, kind)| LayoutError {
            input: input.to_owned(),
            pos,
            kind,
        })?;
        Ok(Self { jobs })
    }
}

/// A layout's problem and the byte it is at.
struct At(usize, LayoutErrorKind);

impl From<JobCountsError> for At {
    fn from(e: JobCountsError) -> Self {
        Self(e.pos(), LayoutErrorKind::Entry(e))
    }
}

impl fmt::Display for Layout {
    /// `chief=1,ps=2` (empty for workers only), which parses back to the same layout.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (job, count)) in self.jobs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{job}={count}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(input: &str) -> String {
        input.parse::<Layout>().unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_value_and_byte() {
        assert_eq!(
            err("chief"),
            "invalid layout \"chief\": expected JOB=COUNT at byte 5 (e.g. chief=1,ps=2), found \
             end of input"
        );
        assert_eq!(
            err("chief=1,,ps=1"),
            "invalid layout \"chief=1,,ps=1\": expected JOB=COUNT at byte 8 (e.g. \
             chief=1,ps=2), found ','"
        );
        assert_eq!(
            err("chief=1,master=1"),
            "invalid layout \"chief=1,master=1\": job \"master\" at byte 8 cannot be placed: a \
             layout places chief, ps or evaluator tasks, and every other task is a worker"
        );
        assert_eq!(
            err("ps=0"),
            "invalid layout \"ps=0\": the count at byte 3 must be a whole number from 1"
        );
        assert_eq!(
            err("ps=+2"),
            "invalid layout \"ps=+2\": the count at byte 3 must be a whole number from 1"
        );
        assert_eq!(
            err("ps=1,ps=2"),
            "invalid layout \"ps=1,ps=2\": job ps is named twice (again at byte 5)"
        );
        assert_eq!(
            err("evaluator=2"),
            "invalid layout \"evaluator=2\": TensorFlow allows one evaluator task, found 2"
        );
    }

    proptest! {
        #[test]
        fn display_round_trips(
            chief in proptest::option::of(Just(1u32)),
            ps in proptest::option::of(1u32..1000),
            evaluator in proptest::option::of(Just(1u32)),
            order in 0usize..3,
        ) {
            let given = [("chief", chief), ("ps", ps), ("evaluator", evaluator)];
            let mut jobs: Vec<(String, u32)> = given
                .into_iter()
                .filter_map(|(j, n)| n.map(|n| (j.to_owned(), n)))
                .collect();
            let shift = order % jobs.len().max(1);
            jobs.rotate_left(shift);
            let layout = Layout { jobs };
            prop_assert_eq!(layout.to_string().parse::<Layout>().unwrap(), layout);
        }

        #[test]
        fn any_input_parses_or_names_a_byte_inside_it(
            input in "((chief|ps|worker|evaluator|x)=[0-9]{0,3},?){0,4}|\\PC{0,16}"
        ) {
            match input.parse::<Layout>() {
                Ok(layout) => {
                    prop_assert_eq!(layout.to_string().parse::<Layout>().unwrap(), layout);
                }
                Err(e) => {
                    prop_assert!(e.pos <= input.len());
                    prop_assert!(input.is_char_boundary(e.pos));
                }
            }
        }
    }
}
