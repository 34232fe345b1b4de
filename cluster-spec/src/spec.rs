//! [`ClusterSpec`]: jobs of tasks with addresses, valid by construction.

use std::cmp::Ordering;
use std::fmt;

use crate::Error;

/// A byte range of [`ClusterSpec::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

/// One task: its index and the span of its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) index: u32,
    pub(crate) address: Span,
}

/// One job: its name and its tasks, sorted by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Job {
    pub(crate) name: Span,
    pub(crate) tasks: Vec<Task>,
}

impl Job {
    /// TensorFlow's dense rule: the indices are exactly `0..n`.
    pub(crate) fn is_dense(&self) -> bool {
        // Tasks are sorted and distinct, so the last index alone decides.
        self.tasks
            .last()
            .is_none_or(|t| t.index as usize + 1 == self.tasks.len())
    }
}

/// A TensorFlow cluster: jobs (in the order they were defined), each a set of tasks with a
/// `host:port` address, as `tf.train.ClusterSpec`.
///
/// A `ClusterSpec` that exists is valid: job names follow `[A-Za-z][A-Za-z0-9_]*`, addresses
/// are `host:port`, task indices fit the proto's `int32`, and no job or task appears twice.
///
/// Jobs are *dense* (tasks `0..n`, written as a JSON array) or *sparse* (any indices, written as
/// a JSON object keyed by index). As in TensorFlow the form is not stored: a job whose indices
/// are exactly `0..n` is dense however it was written, and equality ignores both the form and
/// the order of jobs.
///
/// All job names and addresses live in one string and each task is three integers, which keeps
/// a 10,000-task spec to a handful of allocations.
#[derive(Clone)]
pub struct ClusterSpec {
    /// Every job name and address, back to back.
    pub(crate) text: String,
    /// Jobs in definition order.
    pub(crate) jobs: Vec<Job>,
    /// Positions into `jobs`, sorted by job name (TensorFlow's `ClusterDef` order).
    pub(crate) by_name: Vec<u32>,
}

impl ClusterSpec {
    /// An empty spec: no jobs (TensorFlow's `ClusterSpec({})`).
    pub fn empty() -> Self {
        Self {
            text: String::new(),
            jobs: Vec::new(),
            by_name: Vec::new(),
        }
    }

    pub(crate) fn str_of(&self, span: Span) -> &str {
        &self.text[span.start as usize..span.end as usize]
    }

    pub(crate) fn job_name(&self, job: &Job) -> &str {
        self.str_of(job.name)
    }

    /// Jobs in name order, as TensorFlow's `ClusterDef` and `repr` list them.
    pub(crate) fn jobs_by_name(&self) -> impl Iterator<Item = &Job> {
        self.by_name.iter().map(|&i| &self.jobs[i as usize])
    }

    fn find(&self, job: &str) -> Result<&Job, Error> {
        self.by_name
            .binary_search_by(|&i| self.job_name(&self.jobs[i as usize]).cmp(job))
            .map(|at| &self.jobs[self.by_name[at] as usize])
            .map_err(|_| Error::NoSuchJob { job: job.into() })
    }

    /// The job names, in the order they were defined (TensorFlow's `jobs` property).
    pub fn jobs(&self) -> Vec<&str> {
        self.jobs.iter().map(|j| self.job_name(j)).collect()
    }

    /// Whether the spec has no jobs. TensorFlow's `bool(spec)` is `!spec.is_empty()`: a spec
    /// whose jobs all have no tasks is not empty.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Whether `job` is defined (possibly with no tasks).
    pub fn has_job(&self, job: &str) -> bool {
        self.find(job).is_ok()
    }

    /// The number of tasks defined in `job` (sparse-aware: holes do not count).
    pub fn num_tasks(&self, job: &str) -> Result<usize, Error> {
        Ok(self.find(job)?.tasks.len())
    }

    /// The task indices of `job`, ascending.
    pub fn task_indices(&self, job: &str) -> Result<Vec<u32>, Error> {
        Ok(self.find(job)?.tasks.iter().map(|t| t.index).collect())
    }

    /// The address of task `task` of `job`.
    pub fn task_address(&self, job: &str, task: u32) -> Result<&str, Error> {
        let found = self.find(job)?;
        let entry = if found.is_dense() {
            found.tasks.get(task as usize)
        } else {
            let at = found.tasks.binary_search_by_key(&task, |t| t.index);
            at.ok().map(|i| &found.tasks[i])
        };
        entry
            .map(|t| self.str_of(t.address))
            .ok_or_else(|| Error::NoSuchTask {
                job: job.into(),
                task,
            })
    }

    /// The tasks of `job` as a list indexed by task, `None` in the holes of a sparse job:
    /// `{0: a, 3: b}` gives `[Some(a), None, None, Some(b)]`. An empty job gives `[]`.
    ///
    /// A job with more than 2^20 holes (`{2147483647: a}` would need 16 GiB) is an error,
    /// [`Error::TooSparse`]; [`tasks`](Self::tasks) lists any job.
    pub fn job_tasks(&self, job: &str) -> Result<Vec<Option<&str>>, Error> {
        const MAX_HOLES: usize = 1 << 20;
        let found = self.find(job)?;
        let len = found.tasks.last().map_or(0, |t| t.index as usize + 1);
        if len - found.tasks.len() > MAX_HOLES {
            return Err(Error::TooSparse {
                job: job.into(),
                max_index: (len - 1) as u32,
                tasks: found.tasks.len(),
            });
        }
        let mut out = vec![None; len];
        for t in &found.tasks {
            out[t.index as usize] = Some(self.str_of(t.address));
        }
        Ok(out)
    }

    /// The `(index, address)` pairs of `job`, ascending by index.
    pub fn tasks(&self, job: &str) -> Result<impl ExactSizeIterator<Item = (u32, &str)>, Error> {
        Ok(self
            .find(job)?
            .tasks
            .iter()
            .map(|t| (t.index, self.str_of(t.address))))
    }

    /// Whether `job`'s indices are exactly `0..n` (written as a JSON array), as TensorFlow's
    /// `as_dict` decides.
    pub fn is_dense(&self, job: &str) -> Result<bool, Error> {
        Ok(self.find(job)?.is_dense())
    }

    /// The total number of tasks over all jobs.
    pub fn total_tasks(&self) -> usize {
        self.jobs.iter().map(|j| j.tasks.len()).sum()
    }

    fn job_cmp(&self, a: &Job, other: &Self, b: &Job) -> Ordering {
        self.job_name(a).cmp(other.job_name(b)).then_with(|| {
            let tasks_a = a.tasks.iter().map(|t| (t.index, self.str_of(t.address)));
            let tasks_b = b.tasks.iter().map(|t| (t.index, other.str_of(t.address)));
            tasks_a.cmp(tasks_b)
        })
    }
}

impl Default for ClusterSpec {
    fn default() -> Self {
        Self::empty()
    }
}

/// Order- and form-insensitive, as TensorFlow: `{"w": ["a:1"]}` equals `{"w": {"0": "a:1"}}`,
/// and job order does not matter.
impl PartialEq for ClusterSpec {
    fn eq(&self, other: &Self) -> bool {
        self.jobs.len() == other.jobs.len()
            && self
                .jobs_by_name()
                .zip(other.jobs_by_name())
                .all(|(a, b)| self.job_cmp(a, other, b) == Ordering::Equal)
    }
}

impl Eq for ClusterSpec {}

/// TensorFlow's `repr`: `ClusterSpec({'ps': ['h:1'], 'worker': {0: 'a:1', 3: 'b:2'}})`, jobs
/// sorted by name, dense jobs as lists, sparse jobs as dicts, empty jobs as `{}`.
impl fmt::Display for ClusterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterSpec({")?;
        for (n, job) in self.jobs_by_name().enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            // Names and addresses never hold quotes or backslashes, so Python's repr is
            // simply the text in single quotes.
            write!(f, "'{}': ", self.job_name(job))?;
            let (open, close) = if job.is_dense() && !job.tasks.is_empty() {
                ("[", "]")
            } else {
                ("{", "}")
            };
            f.write_str(open)?;
            for (k, task) in job.tasks.iter().enumerate() {
                if k > 0 {
                    f.write_str(", ")?;
                }
                if open == "{" {
                    write!(f, "{}: ", task.index)?;
                }
                write!(f, "'{}'", self.str_of(task.address))?;
            }
            f.write_str(close)?;
        }
        f.write_str("})")
    }
}

impl fmt::Debug for ClusterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
