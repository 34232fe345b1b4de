//! Building a [`ClusterSpec`]: the public [`ClusterSpecBuilder`] and the [`Assembler`] that
//! every input path (builder, JSON, serde, `ClusterDef`) feeds, so each rule is checked in one
//! place.

use crate::Error;
use crate::grammar::{address_problem, job_name_problem};
use crate::spec::{ClusterSpec, Job, Span, Task};

/// The largest task index: the proto's `int32` maximum.
pub const MAX_TASK_INDEX: u32 = i32::MAX as u32;

/// Collects jobs and tasks, validating each as it arrives.
pub(crate) struct Assembler {
    spec: ClusterSpec,
    /// Address and length of the input `spec.text` starts as a copy of
    /// ([`Assembler::from_source`]); `(0, 0)` otherwise.
    source: (usize, usize),
}

impl Assembler {
    pub(crate) fn new() -> Self {
        Self {
            spec: ClusterSpec::empty(),
            source: (0, 0),
        }
    }

    /// Starts from a copy of the whole input: names and addresses that are slices of `source`
    /// then become spans of the copy instead of copies of their own, one `memcpy` for all.
    pub(crate) fn from_source(source: &str) -> Result<Self, Error> {
        if source.len() > u32::MAX as usize {
            return Err(Error::TooLarge);
        }
        Ok(Self {
            spec: ClusterSpec {
                text: source.to_owned(),
                ..ClusterSpec::empty()
            },
            source: (source.as_ptr() as usize, source.len()),
        })
    }

    /// Makes room for `bytes` more bytes of names and addresses, so the text is allocated once.
    pub(crate) fn reserve_text(&mut self, bytes: usize) {
        self.spec.text.reserve_exact(bytes);
    }

    /// Where `s` lies in the text: its span in the source copy if it is a slice of the source
    /// (found by address, so no bytes are compared), else a new span at the end.
    #[inline]
    fn push_text(&mut self, s: &str) -> Result<Span, Error> {
        let (base, len) = self.source;
        let offset = (s.as_ptr() as usize).wrapping_sub(base);
        if offset <= len && s.len() <= len - offset {
            // from_source checked that the source fits u32 offsets.
            return Ok(Span {
                start: offset as u32,
                end: (offset + s.len()) as u32,
            });
        }
        let start = self.spec.text.len();
        let end = start + s.len();
        if end > u32::MAX as usize {
            return Err(Error::TooLarge);
        }
        self.spec.text.push_str(s);
        Ok(Span {
            start: start as u32,
            end: end as u32,
        })
    }

    /// Opens a new job; its tasks follow. Duplicate names are found in [`Assembler::finish`].
    pub(crate) fn begin_job(&mut self, name: &str) -> Result<(), Error> {
        if let Some(reason) = job_name_problem(name) {
            return Err(Error::InvalidJobName {
                name: name.into(),
                reason,
            });
        }
        let name = self.push_text(name)?;
        self.spec.jobs.push(Job {
            name,
            tasks: Vec::new(),
        });
        Ok(())
    }

    fn current(&mut self) -> &mut Job {
        self.spec
            .jobs
            .last_mut()
            .expect("begin_job precedes every task")
    }

    fn current_name(&self) -> String {
        self.spec
            .jobs
            .last()
            .map(|j| self.spec.job_name(j).to_owned())
            .unwrap_or_default()
    }

    /// The index the next dense task of the current job gets.
    pub(crate) fn next_dense_index(&self) -> u32 {
        self.spec.jobs.last().map_or(0, |j| j.tasks.len() as u32)
    }

    /// Adds a task to the current job, checking its index and address.
    pub(crate) fn task(&mut self, index: u32, address: &str) -> Result<(), Error> {
        if index > MAX_TASK_INDEX {
            return Err(Error::InvalidTaskIndex {
                job: self.current_name(),
                index: index.to_string(),
                reason: "task indices must be at most 2147483647",
            });
        }
        if let Some(problem) = address_problem(address) {
            return Err(self.address_error(index, address, problem.to_string()));
        }
        self.task_prevalidated(index, address)
    }

    /// Adds a task whose index and address the caller has already checked.
    #[inline]
    fn task_prevalidated(&mut self, index: u32, address: &str) -> Result<(), Error> {
        let address = self.push_text(address)?;
        self.push_task(Task { index, address });
        Ok(())
    }

    /// Adds a task whose address the caller has checked and found at `start..end` of the
    /// source given to [`Assembler::from_source`]: the JSON hot path, which knows the offsets
    /// and so skips [`push_text`](Self::push_text)'s search.
    #[inline]
    pub(crate) fn task_in_source(&mut self, index: u32, start: usize, end: usize) {
        debug_assert!(end <= self.source.1);
        // from_source checked that the source fits u32 offsets.
        let address = Span {
            start: start as u32,
            end: end as u32,
        };
        self.push_task(Task { index, address });
    }

    /// Appends a task to the current job. A job's first task gets room for itself alone: most
    /// jobs of a big cluster have one task (`chief`, or one job per host), and `Vec`'s first
    /// allocation of four would take 64 bytes of heap for each.
    #[inline]
    fn push_task(&mut self, task: Task) {
        let tasks = &mut self.current().tasks;
        if tasks.capacity() == 0 {
            tasks.reserve_exact(1);
        }
        tasks.push(task);
    }

    /// The error for a bad address of task `index` of the current job.
    pub(crate) fn address_error(&self, index: u32, address: &str, reason: String) -> Error {
        Error::InvalidAddress {
            job: self.current_name(),
            task: index,
            address: address.into(),
            reason,
        }
    }

    /// Closes the current job: sorts its tasks and rejects a repeated index.
    pub(crate) fn end_job(&mut self) -> Result<(), Error> {
        let Some(job) = self.spec.jobs.last_mut() else {
            return Ok(());
        };
        // Dense input arrives sorted; only sparse input pays for the sort.
        if !job.tasks.is_sorted_by_key(|t| t.index) {
            job.tasks.sort_by_key(|t| t.index);
        }
        let job = &self.spec.jobs[self.spec.jobs.len() - 1];
        match job.tasks.windows(2).find(|w| w[0].index == w[1].index) {
            Some(pair) => Err(Error::DuplicateTask {
                job: self.spec.job_name(job).into(),
                task: pair[0].index,
                first: self.spec.str_of(pair[0].address).into(),
                second: self.spec.str_of(pair[1].address).into(),
            }),
            None => Ok(()),
        }
    }

    /// Finishes the spec: indexes jobs by name and rejects a repeated job name.
    pub(crate) fn finish(mut self) -> Result<ClusterSpec, Error> {
        let spec = &mut self.spec;
        let mut by_name: Vec<u32> = (0..spec.jobs.len() as u32).collect();
        by_name.sort_by(|&a, &b| {
            spec.job_name(&spec.jobs[a as usize])
                .cmp(spec.job_name(&spec.jobs[b as usize]))
        });
        if let Some(pair) = by_name.windows(2).find(|w| {
            spec.job_name(&spec.jobs[w[0] as usize]) == spec.job_name(&spec.jobs[w[1] as usize])
        }) {
            return Err(Error::DuplicateJob {
                job: spec.job_name(&spec.jobs[pair[0] as usize]).into(),
            });
        }
        spec.by_name = by_name;
        spec.text.shrink_to_fit();
        Ok(self.spec)
    }
}

/// Builds a [`ClusterSpec`] job by job; the first invalid name, address or index is reported
/// by [`build`](ClusterSpecBuilder::build).
///
/// ```
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder()
///     .job("worker", ["w0.example.com:2222", "w1.example.com:2222"])
///     .sparse_job("ps", [(3, "ps3.example.com:2222")])
///     .build()?;
/// assert_eq!(spec.task_address("ps", 3)?, "ps3.example.com:2222");
/// assert_eq!(spec.jobs(), ["worker", "ps"]);
/// # Ok::<(), cluster_spec::Error>(())
/// ```
pub struct ClusterSpecBuilder {
    assembler: Assembler,
    error: Option<Error>,
}

// Here rather than in spec.rs, so that the spec knows nothing of how it is built.
impl ClusterSpec {
    /// Starts building a spec job by job; see [`ClusterSpecBuilder`].
    pub fn builder() -> ClusterSpecBuilder {
        ClusterSpecBuilder::default()
    }
}

impl Default for ClusterSpecBuilder {
    fn default() -> Self {
        Self {
            assembler: Assembler::new(),
            error: None,
        }
    }
}

impl ClusterSpecBuilder {
    fn add<F>(mut self, name: &str, tasks: F) -> Self
    where
        F: FnOnce(&mut Assembler) -> Result<(), Error>,
    {
        if self.error.is_none() {
            let result = self
                .assembler
                .begin_job(name)
                .and_then(|()| tasks(&mut self.assembler))
                .and_then(|()| self.assembler.end_job());
            self.error = result.err();
        }
        self
    }

    /// Adds a dense job: task `i` is the `i`-th address.
    pub fn job<I, S>(self, name: &str, addresses: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.add(name, |a| {
            addresses
                .into_iter()
                .try_for_each(|addr| a.task(a.next_dense_index(), addr.as_ref()))
        })
    }

    /// Adds a sparse job from `(index, address)` pairs, in any order. Indices must be distinct
    /// and at most 2^31-1; if they are exactly `0..n` the job is dense.
    pub fn sparse_job<I, S>(self, name: &str, tasks: I) -> Self
    where
        I: IntoIterator<Item = (u32, S)>,
        S: AsRef<str>,
    {
        self.add(name, |a| {
            tasks
                .into_iter()
                .try_for_each(|(index, addr)| a.task(index, addr.as_ref()))
        })
    }

    /// The spec, or the first error met while adding jobs.
    pub fn build(self) -> Result<ClusterSpec, Error> {
        match self.error {
            Some(error) => Err(error),
            None => self.assembler.finish(),
        }
    }
}
