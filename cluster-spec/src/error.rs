//! The one error type of this crate.

use thiserror::Error;

use crate::private::quote::{excerpt, quote};

/// Everything that can go wrong building, parsing or querying a [`ClusterSpec`](crate::ClusterSpec).
///
/// Every message names the job, the task and the offending value; where TensorFlow has wording
/// for the same condition (`No such job in cluster: 'x'`) it is reused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A job name does not follow TensorFlow's device-name grammar `[A-Za-z][A-Za-z0-9_]*`.
    #[error(
        "invalid job name {}: {reason}",
        quote(.name, crate::job_name::problem_at(.name))
    )]
    InvalidJobName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A task address is not `host:port`.
    #[error(
        "invalid address {} for task {task} of job '{}': {reason}",
        quote(.address, 0),
        excerpt(.job, 0)
    )]
    InvalidAddress {
        /// The job of the task.
        job: String,
        /// The task index.
        task: u32,
        /// The rejected address.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A task index is not a decimal number from 0 to 2^31-1 (the proto's `int32`).
    #[error(
        "invalid task index {} in job '{}': {reason}",
        quote(.index, 0),
        excerpt(.job, 0)
    )]
    InvalidTaskIndex {
        /// The job of the task.
        job: String,
        /// The rejected index, as written.
        index: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The same job name appears twice.
    #[error("Duplicate job ID in cluster specification: {}", excerpt(.job, 0))]
    DuplicateJob {
        /// The repeated job name.
        job: String,
    },
    /// Two entries of one job name the same task index.
    #[error(
        "job '{}' specifies two addresses for task {task}: {} and {}",
        excerpt(.job, 0),
        quote(.first, 0),
        quote(.second, 0)
    )]
    DuplicateTask {
        /// The job.
        job: String,
        /// The repeated task index.
        task: u32,
        /// The address given first.
        first: String,
        /// The address given later.
        second: String,
    },
    /// A job's tasks are neither a list nor an object of index to address (TensorFlow's wording).
    #[error(
        "The tasks for job '{}' must be a list or a dictionary from integers to strings (found {found}).",
        excerpt(.job, 0)
    )]
    InvalidTasks {
        /// The job.
        job: String,
        /// What was found instead, e.g. `a string`.
        found: &'static str,
    },
    /// The JSON text is malformed, or is not an object of jobs.
    #[error("invalid cluster JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in characters) of the problem.
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// The job is not in the cluster (TensorFlow's wording).
    #[error("No such job in cluster: '{}'", excerpt(.job, 0))]
    NoSuchJob {
        /// The job asked for.
        job: String,
    },
    /// The job has no task with this index (TensorFlow's wording).
    #[error("No task with index {task} in job '{}'", excerpt(.job, 0))]
    NoSuchTask {
        /// The job.
        job: String,
        /// The task index asked for.
        task: u32,
    },
    /// A job is too sparse to list with [`job_tasks`](crate::ClusterSpec::job_tasks): the list
    /// would hold more than 2^20 holes.
    #[error(
        "job '{}' is too sparse to list by index (highest index {max_index} for {tasks} tasks); iterate tasks() instead",
        excerpt(.job, 0)
    )]
    TooSparse {
        /// The job.
        job: String,
        /// Its highest task index.
        max_index: u32,
        /// Its number of tasks.
        tasks: usize,
    },
    /// Encoded `ClusterDef` bytes are not a valid protobuf message.
    #[error("invalid ClusterDef bytes: {message}")]
    Decode {
        /// What the decoder found.
        message: String,
    },
    /// The cluster holds more text than its 4 GiB of addresses and names can index.
    #[error("cluster too large: more than 4 GiB of job names and addresses")]
    TooLarge,
}
