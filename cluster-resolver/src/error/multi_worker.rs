//! [`Error`]: a cluster or task that breaks TensorFlow's chief / evaluator rules.

use cluster_spec::__private::quote::excerpt;

/// Why a cluster or task breaks the rules of [`multi_worker`](crate::multi_worker); the
/// messages start with TensorFlow's `ValueError` text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A job a rule counts is not in the spec: [`worker_count`](crate::multi_worker::worker_count)
    /// of the evaluator in a cluster without one (TensorFlow raises `KeyError`).
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// The cluster has a job other than chief, worker, evaluator and ps.
    #[error(
        "Disallowed task type found in cluster spec. Allowed types are {} and the cluster spec \
         is {spec}. (job '{}')",
        ALLOWED_REPR,
        excerpt(.job, 0)
    )]
    DisallowedJob {
        /// The first such job.
        job: String,
        /// The spec, as TensorFlow prints it.
        spec: String,
    },
    /// The task type is not chief, worker, evaluator or ps.
    #[error(
        "Unrecognized task_type: {}, valid task types are: {}",
        excerpt(.task_type, 0),
        ALLOWED_REPR
    )]
    UnrecognizedTaskType {
        /// The task type.
        task_type: String,
    },
    /// The task type is not a job of the cluster (and is not `evaluator`).
    #[error("`task_type` '{}' not found in cluster_spec.", excerpt(.task_type, 0))]
    TaskTypeNotInCluster {
        /// The task type.
        task_type: String,
    },
    /// The cluster has more than one chief task.
    #[error("There must be at most one 'chief' job. (job 'chief' has {count} tasks)")]
    TooManyChiefs {
        /// The number of chief tasks.
        count: usize,
    },
    /// The cluster has more than one evaluator task.
    #[error("There must be at most one 'evaluator' job. (job 'evaluator' has {count} tasks)")]
    TooManyEvaluators {
        /// The number of evaluator tasks.
        count: usize,
    },
    /// The task id is not below the number of tasks of its job.
    #[error(
        "The `task_id` {task_id} exceeds the maximum id of {}. (it has {num_tasks} tasks)",
        excerpt(.task_type, 0)
    )]
    TaskIdOutOfRange {
        /// The task type.
        task_type: String,
        /// The task id.
        task_id: u32,
        /// The number of tasks of the job.
        num_tasks: usize,
    },
    /// A rule needs the task id and none was given (a `TypeError` in TensorFlow).
    #[error("no `task_id` given for task_type '{}'", excerpt(.task_type, 0))]
    MissingTaskId {
        /// The task type.
        task_type: String,
    },
    /// `worker_count` of a task type other than chief, worker and evaluator.
    #[error(
        "Unexpected `task_type` {}",
        excerpt(&python_repr(.task_type.as_deref()), 0)
    )]
    UnexpectedTaskType {
        /// The task type, if any.
        task_type: Option<String>,
    },
    /// `id_in_cluster` of a task type other than chief, worker and evaluator.
    #[error(
        "There is no id for task_type {}",
        excerpt(&python_repr(.task_type.as_deref()), 0)
    )]
    NoIdForTaskType {
        /// The task type, if any.
        task_type: Option<String>,
    },
    /// The cluster has none of the jobs that could lead (an `AssertionError` in TensorFlow).
    #[error("cluster spec {spec} has no {candidates} job to lead {what}")]
    NoLeader {
        /// What is led: `collective ops` or `the coordination service`.
        what: &'static str,
        /// The jobs that could, e.g. `'chief' or 'worker'`.
        candidates: &'static str,
        /// The spec, as TensorFlow prints it.
        spec: String,
    },
}

/// The job names the rules allow, with `None` (no task type), as TensorFlow prints them.
const ALLOWED_REPR: &str = "('chief', 'worker', 'evaluator', 'ps', None)";

/// Python's `repr` of an optional task type (the rules only print allowed names, which need
/// no escaping).
fn python_repr(task_type: Option<&str>) -> String {
    task_type.map_or_else(|| "None".to_owned(), |t| format!("'{t}'"))
}
