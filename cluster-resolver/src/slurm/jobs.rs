//! The jobs map: which ranks belong to which TensorFlow job.

use super::Error;

/// Job names with their number of tasks, sorted by name, as TensorFlow's resolver walks
/// `sorted(jobs.items())`: the first job (by name) takes ranks `0..n0`, the next `n0..n0+n1`, …
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Jobs {
    sorted: Vec<(String, u32)>,
}

impl Jobs {
    /// The jobs, sorted by name; a name given twice is an error (a Python dict cannot hold it).
    pub(super) fn new(jobs: &[(String, u32)]) -> Result<Self, Error> {
        let mut sorted = jobs.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::DuplicateJob {
                job: w[0].0.clone(),
            });
        }
        Ok(Self { sorted })
    }

    /// TensorFlow's default: every task of the step is a `worker`.
    pub(super) fn all_workers(num_tasks: u32) -> Self {
        Self {
            sorted: vec![("worker".to_owned(), num_tasks)],
        }
    }

    /// The tasks the jobs ask for, in all.
    pub(super) fn total(&self) -> u64 {
        self.sorted.iter().map(|(_, n)| u64::from(*n)).sum()
    }

    /// Each job with the first rank it takes, in name order.
    pub(super) fn with_first_rank(&self) -> impl Iterator<Item = (&str, u32, u32)> {
        let mut next = 0u32;
        self.sorted.iter().map(move |(name, n)| {
            let first = next;
            // The caller checked that the total equals the step's tasks, which fit in u32.
            next = next.saturating_add(*n);
            (name.as_str(), first, *n)
        })
    }

    /// The job and task index of `rank`, if a job holds it.
    pub(super) fn task_of(&self, rank: u32) -> Option<(&str, u32)> {
        self.with_first_rank()
            .find(|&(_, first, n)| rank >= first && rank - first < n)
            .map(|(name, first, _)| (name, rank - first))
    }

    /// `{"ps": 2, "worker": 3}`, for messages.
    pub(super) fn describe(&self) -> String {
        let items: Vec<String> = self
            .sorted
            .iter()
            .map(|(name, n)| format!("{name:?}: {n}"))
            .collect();
        format!("{{{}}}", items.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(j: &[(&str, u32)]) -> Result<Jobs, Error> {
        let owned: Vec<(String, u32)> = j.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        Jobs::new(&owned)
    }

    #[test]
    fn ranks_go_to_jobs_in_name_order() {
        let j = jobs(&[("worker", 3), ("ps", 2), ("chief", 1)]).unwrap();
        assert_eq!(j.total(), 6);
        let got: Vec<_> = (0..7).map(|r| j.task_of(r)).collect();
        assert_eq!(
            got,
            [
                Some(("chief", 0)),
                Some(("ps", 0)),
                Some(("ps", 1)),
                Some(("worker", 0)),
                Some(("worker", 1)),
                Some(("worker", 2)),
                None
            ]
        );
        assert_eq!(j.describe(), r#"{"chief": 1, "ps": 2, "worker": 3}"#);
    }

    #[test]
    fn empty_jobs_take_no_rank_and_duplicates_are_refused() {
        let j = jobs(&[("a", 0), ("b", 1)]).unwrap();
        assert_eq!(j.task_of(0), Some(("b", 0)));
        let e = jobs(&[("w", 1), ("w", 2)]).unwrap_err().to_string();
        assert!(e.contains("'w'"), "{e}");
    }
}
