//! [`TaskId`]: one task of a cluster, named as TensorFlow names its workers. Every layer that
//! names a task (the connect layer's contexts, the launchers' output and failures) uses this
//! one type.

use std::fmt;

/// One task of a cluster: a job name and a task index. Displays as TensorFlow's worker name,
/// `/job:J/replica:0/task:T`, the form its errors and logs use.
///
/// ```
/// use cluster_spec::TaskId;
///
/// let task = TaskId::new("worker", 1);
/// assert_eq!(task.to_string(), "/job:worker/replica:0/task:1");
/// assert_eq!(task.short_name(), "worker:1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    /// The job (`worker`, `ps`, …).
    pub job: String,
    /// The task index within the job.
    pub task: u32,
}

impl TaskId {
    /// The task `task` of job `job`.
    pub fn new(job: impl Into<String>, task: u32) -> Self {
        Self {
            job: job.into(),
            task,
        }
    }

    /// The prefix of every device name of this task: `/job:J/replica:0/task:T`.
    pub fn device_prefix(&self) -> String {
        self.to_string()
    }

    /// `J:T` (`worker:1`): the short form launchers print before a task's output lines.
    pub fn short_name(&self) -> String {
        format!("{}:{}", self.job, self.task)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/job:{}/replica:0/task:{}", self.job, self.task)
    }
}
