//! `JOB=COUNT,...`: jobs and how many tasks each has, in the order given — the shape of a
//! cluster before it has addresses (`run --local chief=1,worker=2`, `--layout chief=1,ps=2`).
//! One parser, whose errors name the byte; each caller adds its own rules per entry.
//!
//! ```
//! use cluster_spec::job_counts::{self, JobCountsError};
//!
//! let jobs = job_counts::parse("chief=1,worker=2", |_| Ok::<(), JobCountsError>(()))?;
//! assert_eq!(jobs, [("chief".to_owned(), 1), ("worker".to_owned(), 2)]);
//! let err: JobCountsError = job_counts::parse("worker=2,worker=1", |_| Ok(())).unwrap_err();
//! assert_eq!(err.to_string(), "job worker is named twice (again at byte 9)");
//! assert_eq!(err.pos(), 9);
//! # Ok::<(), JobCountsError>(())
//! ```

use crate::grammar::job_name_problem;
use crate::job_name;

/// One entry of a `JOB=COUNT` list, with where its parts start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobCount<'a> {
    /// The job's name, a valid TensorFlow job name.
    pub job: &'a str,
    /// The byte the job's name starts at.
    pub pos: usize,
    /// Its task count, at least 1.
    pub count: u32,
    /// The byte the count starts at.
    pub count_pos: usize,
}

/// Why a `JOB=COUNT` list does not parse, and at which byte of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobCountsError {
    /// An entry is not `JOB=COUNT`.
    #[error("expected JOB=COUNT at byte {pos} (e.g. chief=1,ps=2), found {}",
        found.map_or_else(|| "end of input".to_owned(), |c| format!("{c:?}")))]
    Syntax {
        /// Where the entry breaks.
        pos: usize,
        /// The character found there; `None` at the end of the input.
        found: Option<char>,
    },
    /// A job's name breaks TensorFlow's rule, `[A-Za-z][A-Za-z0-9_]*`.
    #[error("job {job:?} at byte {pos}: {problem}")]
    JobName {
        /// The name given.
        job: String,
        /// Where the name breaks the rule.
        pos: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A count is not a whole number from 1 that fits in 32 bits.
    #[error("the count at byte {pos} must be a whole number from 1")]
    BadCount {
        /// Its first byte.
        pos: usize,
    },
    /// A job is named twice.
    #[error("job {job} is named twice (again at byte {pos})")]
    Duplicate {
        /// The job.
        job: String,
        /// The second entry's first byte.
        pos: usize,
    },
}

impl JobCountsError {
    /// The byte of the input the error is at.
    pub fn pos(&self) -> usize {
        match self {
            Self::Syntax { pos, .. }
            | Self::JobName { pos, .. }
            | Self::BadCount { pos }
            | Self::Duplicate { pos, .. } => *pos,
        }
    }
}

/// Parses `input` (the empty string is no jobs), calling `check` on each entry in order once
/// its syntax, name, count and uniqueness are known to be good, so the caller's own rules
/// (which jobs it allows, how many tasks) fail at the first entry that breaks them.
pub fn parse<E: From<JobCountsError>>(
    input: &str,
    mut check: impl FnMut(&JobCount<'_>) -> Result<(), E>,
) -> Result<Vec<(String, u32)>, E> {
    let mut jobs: Vec<(String, u32)> = Vec::new();
    if input.is_empty() {
        return Ok(jobs);
    }
    let mut start = 0;
    for entry in input.split(',') {
        let syntax = |pos: usize| JobCountsError::Syntax {
            pos,
            found: input[pos..].chars().next(),
        };
        let Some((job, count)) = entry.split_once('=') else {
            return Err(syntax(start + entry.len()).into());
        };
        if job.is_empty() {
            return Err(syntax(start).into());
        }
        if let Some(problem) = job_name_problem(job) {
            let at = job_name::problem_at(job);
            return Err(JobCountsError::JobName {
                job: job.to_owned(),
                pos: start + at,
                problem,
            }
            .into());
        }
        let count_pos = start + job.len() + 1;
        let count: u32 = count
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| count.parse().ok())
            .flatten()
            .filter(|&n| n > 0)
            .ok_or(JobCountsError::BadCount { pos: count_pos })?;
        if jobs.iter().any(|(j, _)| j == job) {
            return Err(JobCountsError::Duplicate {
                job: job.to_owned(),
                pos: start,
            }
            .into());
        }
        check(&JobCount {
            job,
            pos: start,
            count,
            count_pos,
        })?;
        jobs.push((job.to_owned(), count));
        start += entry.len() + 1;
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(input: &str) -> String {
        parse(input, |_| Ok::<(), JobCountsError>(()))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_the_byte() {
        assert_eq!(
            err("chief"),
            "expected JOB=COUNT at byte 5 (e.g. chief=1,ps=2), found end of input"
        );
        assert_eq!(
            err("chief=1,,ps=1"),
            "expected JOB=COUNT at byte 8 (e.g. chief=1,ps=2), found ','"
        );
        assert_eq!(
            err("ps=1,w-x=1"),
            "job \"w-x\" at byte 6: job names may hold only letters, digits and '_', not '-' \
             (at byte 1)"
        );
        assert_eq!(
            err("ps=0"),
            "the count at byte 3 must be a whole number from 1"
        );
        assert_eq!(
            err("ps=+2"),
            "the count at byte 3 must be a whole number from 1"
        );
        assert_eq!(
            err("ps=99999999999"),
            "the count at byte 3 must be a whole number from 1"
        );
        assert_eq!(err("ps=1,ps=2"), "job ps is named twice (again at byte 5)");
    }

    #[test]
    fn the_callers_rule_fails_at_its_entry() {
        let result = parse("chief=1,ps=2", |e| {
            if e.job == "ps" {
                Err(format!("no ps at byte {}", e.pos))
            } else {
                Ok(())
            }
        });
        assert_eq!(result.unwrap_err(), "no ps at byte 8");
    }

    impl From<JobCountsError> for String {
        fn from(e: JobCountsError) -> Self {
            e.to_string()
        }
    }

    proptest! {
        #[test]
        fn any_input_parses_back_or_names_a_byte_inside_it(
            input in "((chief|ps|worker|x-y|9)=[0-9]{0,3},?){0,4}|\\PC{0,16}"
        ) {
            match parse(&input, |_| Ok::<(), JobCountsError>(())) {
                Ok(jobs) => {
                    let text: Vec<String> = jobs.iter().map(|(j, n)| format!("{j}={n}")).collect();
                    let again = parse(&text.join(","), |_| Ok::<(), JobCountsError>(()));
                    prop_assert_eq!(again.unwrap(), jobs);
                }
                Err(e) => {
                    prop_assert!(e.pos() <= input.len());
                    prop_assert!(input.is_char_boundary(e.pos()));
                }
            }
        }
    }
}
