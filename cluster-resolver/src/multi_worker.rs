//! TensorFlow's chief / evaluator rules (`tensorflow/python/distribute/multi_worker_util.py`):
//! which task is the chief, how many workers train, each worker's id, and who leads collective
//! ops and the coordination service. Multi-worker strategies (and anything that must agree
//! with them, such as who writes checkpoints) follow these rules.
//!
//! A task type and id are `impl Into<Option<..>>`, so both `"worker", 0` and a resolver's
//! `resolver.task_type().as_deref(), resolver.task_id()` can be passed.
//!
//! ```
//! use cluster_resolver::multi_worker::{collective_leader, id_in_cluster, is_chief, worker_count};
//! use cluster_spec::ClusterSpec;
//!
//! let spec = ClusterSpec::builder()
//!     .job("chief", ["c:1"])
//!     .job("worker", ["w0:1", "w1:1"])
//!     .job("evaluator", ["e:1"])
//!     .build()?;
//! assert!(is_chief(&spec, "chief", 0)?);
//! assert!(!is_chief(&spec, "worker", 0)?); // worker 0 is chief only without a chief job
//! assert!(is_chief(&spec, "evaluator", 0)?); // the evaluator is its own chief
//! assert_eq!(worker_count(&spec, "worker")?, 3); // the chief is a worker too
//! assert_eq!(worker_count(&spec, "evaluator")?, 1);
//! assert_eq!(id_in_cluster(&spec, "worker", 1)?, 2);
//! assert_eq!(collective_leader(&spec, "worker", 1)?, "/job:chief/replica:0/task:0");
//! assert_eq!(
//!     is_chief(&spec, "worker", 2).unwrap_err().to_string(),
//!     "The `task_id` 2 exceeds the maximum id of worker. (it has 2 tasks)"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Differences from TensorFlow
//!
//! Error messages start with TensorFlow's `ValueError` text and add the count or job in
//! parentheses. Where TensorFlow fails by accident rather than by a check, there is an error of
//! our own:
//!
//! - a task id needed but not given ([`Error::MissingTaskId`]): TensorFlow's `None >= n`
//!   raises `TypeError`, and `id_in_cluster` of an evaluator outside the cluster returns
//!   `None`;
//! - [`worker_count`] of `"evaluator"` when the cluster has no evaluator job is TensorFlow's
//!   `No such job in cluster: 'evaluator'` error, where TensorFlow raises `KeyError`;
//! - [`collective_leader`] and [`coordination_leader`] of a cluster with no job able to lead
//!   ([`Error::NoLeader`]): TensorFlow's is a bare `AssertionError`.
//!
//! Every function fails with this module's [`Error`], which the crate's
//! [`Error`](crate::Error) wraps.
//!
//! There is no `normalize_cluster_spec`: a [`ClusterSpec`] is the only input, and a worker
//! context (`dc_context`) does not exist here.

use cluster_spec::ClusterSpec;

pub use crate::error::multi_worker::Error;

const ALLOWED: [&str; 4] = ["chief", "worker", "evaluator", "ps"];

/// The number of tasks of `job`, 0 when there is no such job (TensorFlow's `task_count`).
fn task_count(spec: &ClusterSpec, job: &str) -> usize {
    spec.num_tasks(job).unwrap_or(0)
}

/// TensorFlow's `_validate_cluster_spec`, check by check in its order.
fn validate(
    spec: &ClusterSpec,
    task_type: Option<&str>,
    task_id: Option<u32>,
) -> Result<(), Error> {
    if let Some(job) = spec.jobs().into_iter().find(|j| !ALLOWED.contains(j)) {
        return Err(Error::DisallowedJob {
            job: job.to_owned(),
            spec: spec.to_string(),
        });
    }
    if let Some(t) = task_type {
        if !ALLOWED.contains(&t) {
            return Err(Error::UnrecognizedTaskType {
                task_type: t.to_owned(),
            });
        }
        if t != "evaluator" && !spec.has_job(t) {
            return Err(Error::TaskTypeNotInCluster {
                task_type: t.to_owned(),
            });
        }
    }
    let chiefs = task_count(spec, "chief");
    if chiefs > 1 {
        return Err(Error::TooManyChiefs { count: chiefs });
    }
    let evaluators = task_count(spec, "evaluator");
    if evaluators > 1 {
        return Err(Error::TooManyEvaluators { count: evaluators });
    }
    // The evaluator may be missing from the cluster; any other task type is in it by now.
    if let Some(t) = task_type.filter(|t| spec.has_job(t)) {
        let num_tasks = task_count(spec, t);
        match task_id {
            None => {
                return Err(Error::MissingTaskId {
                    task_type: t.to_owned(),
                });
            }
            // As TensorFlow: the id is compared with the number of tasks, so in a sparse job
            // an existing task with a higher index is out of range too.
            Some(id) if id as usize >= num_tasks => {
                return Err(Error::TaskIdOutOfRange {
                    task_type: t.to_owned(),
                    task_id: id,
                    num_tasks,
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Whether the task is the chief: the chief, the evaluator (its own chief), or worker 0 of a
/// cluster without a chief job (TensorFlow's `multi_worker_util.is_chief`).
///
/// Errors when the cluster or task breaks TensorFlow's rules: jobs other than chief, worker,
/// evaluator and ps; an unknown task type; a task type not in the cluster (except evaluator);
/// more than one chief or evaluator; a task id not below its job's task count.
///
/// ```
/// use cluster_resolver::multi_worker::is_chief;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("worker", ["w0:1", "w1:1"]).build()?;
/// assert!(is_chief(&spec, "worker", 0)?);
/// assert!(!is_chief(&spec, "worker", 1)?);
/// assert!(!is_chief(&spec, None, None)?);
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn is_chief<'a>(
    spec: &ClusterSpec,
    task_type: impl Into<Option<&'a str>>,
    task_id: impl Into<Option<u32>>,
) -> Result<bool, Error> {
    let (task_type, task_id) = (task_type.into(), task_id.into());
    validate(spec, task_type, task_id)?;
    Ok(match task_type {
        Some("chief" | "evaluator") => true,
        Some("worker") => !spec.has_job("chief") && task_id == Some(0),
        _ => false,
    })
}

/// The number of workers a task of `task_type` trains with: chief tasks plus worker tasks, or
/// for the evaluator, the evaluator tasks (TensorFlow's `multi_worker_util.worker_count`).
///
/// ```
/// use cluster_resolver::multi_worker::worker_count;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("worker", ["w0:1", "w1:1"]).job("ps", ["p:1"]).build()?;
/// assert_eq!(worker_count(&spec, "worker")?, 2);
/// assert_eq!(worker_count(&spec, "ps").unwrap_err().to_string(), "Unexpected `task_type` 'ps'");
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn worker_count<'a>(
    spec: &ClusterSpec,
    task_type: impl Into<Option<&'a str>>,
) -> Result<usize, Error> {
    let task_type = task_type.into();
    validate(spec, task_type, Some(0))?;
    match task_type {
        Some("evaluator") => Ok(spec.num_tasks("evaluator")?),
        Some("chief" | "worker") => Ok(task_count(spec, "chief") + task_count(spec, "worker")),
        other => Err(Error::UnexpectedTaskType {
            task_type: other.map(str::to_owned),
        }),
    }
}

/// The task's id among the workers, from 0 to [`worker_count`]: the chief is 0, worker `i` is
/// `i` plus the number of chief tasks, evaluator `i` is `i` (TensorFlow's
/// `multi_worker_util.id_in_cluster`).
///
/// ```
/// use cluster_resolver::multi_worker::id_in_cluster;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("chief", ["c:1"]).job("worker", ["w0:1"]).build()?;
/// assert_eq!(id_in_cluster(&spec, "chief", 0)?, 0);
/// assert_eq!(id_in_cluster(&spec, "worker", 0)?, 1);
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn id_in_cluster<'a>(
    spec: &ClusterSpec,
    task_type: impl Into<Option<&'a str>>,
    task_id: impl Into<Option<u32>>,
) -> Result<u32, Error> {
    let (task_type, task_id) = (task_type.into(), task_id.into());
    validate(spec, task_type, task_id)?;
    let id = |t: &str| {
        task_id.ok_or_else(|| Error::MissingTaskId {
            task_type: t.to_owned(),
        })
    };
    match task_type {
        Some("chief") => Ok(0),
        // Validated: at most one chief, and the id is below the worker count (< 2^31).
        Some(t @ "worker") => Ok(id(t)? + task_count(spec, "chief") as u32),
        Some(t @ "evaluator") => id(t),
        other => Err(Error::NoIdForTaskType {
            task_type: other.map(str::to_owned),
        }),
    }
}

/// The device name of the task leading collective ops: `""` for an empty cluster or an
/// evaluator, else chief 0 if there is a chief job, else worker 0 (TensorFlow's
/// `multi_worker_util.collective_leader`).
///
/// ```
/// use cluster_resolver::multi_worker::collective_leader;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("worker", ["w0:1", "w1:1"]).build()?;
/// assert_eq!(collective_leader(&spec, "worker", 1)?, "/job:worker/replica:0/task:0");
/// assert_eq!(collective_leader(&ClusterSpec::empty(), None, None)?, "");
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn collective_leader<'a>(
    spec: &ClusterSpec,
    task_type: impl Into<Option<&'a str>>,
    task_id: impl Into<Option<u32>>,
) -> Result<String, Error> {
    let (task_type, task_id) = (task_type.into(), task_id.into());
    if spec.is_empty() {
        return Ok(String::new());
    }
    validate(spec, task_type, task_id)?;
    if task_type == Some("evaluator") {
        return Ok(String::new());
    }
    leader(
        spec,
        &["chief", "worker"],
        "'chief' or 'worker'",
        "collective ops",
    )
}

/// The device name of the task leading the coordination service: `""` for an empty cluster,
/// else ps 0, chief 0 or worker 0, the first whose job exists (TensorFlow's
/// `multi_worker_util.coordination_leader`; it validates nothing else).
///
/// ```
/// use cluster_resolver::multi_worker::coordination_leader;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("worker", ["w:1"]).job("ps", ["p:1"]).build()?;
/// assert_eq!(coordination_leader(&spec)?, "/job:ps/replica:0/task:0");
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn coordination_leader(spec: &ClusterSpec) -> Result<String, Error> {
    if spec.is_empty() {
        return Ok(String::new());
    }
    leader(
        spec,
        &["ps", "chief", "worker"],
        "'ps', 'chief' or 'worker'",
        "the coordination service",
    )
}

fn leader(
    spec: &ClusterSpec,
    jobs: &[&str],
    candidates: &'static str,
    what: &'static str,
) -> Result<String, Error> {
    jobs.iter()
        .find(|job| spec.has_job(job))
        .map(|job| format!("/job:{job}/replica:0/task:0"))
        .ok_or_else(|| Error::NoLeader {
            what,
            candidates,
            spec: spec.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> ClusterSpec {
        ClusterSpec::from_json(json).unwrap()
    }

    #[test]
    fn validation_order_and_wording() {
        let s = spec(r#"{"worker": ["a:1"], "foo": ["b:1"]}"#);
        assert_eq!(
            is_chief(&s, "worker", 0).unwrap_err().to_string(),
            "Disallowed task type found in cluster spec. Allowed types are ('chief', 'worker', \
             'evaluator', 'ps', None) and the cluster spec is ClusterSpec({'foo': ['b:1'], \
             'worker': ['a:1']}). (job 'foo')"
        );
        let s = spec(r#"{"worker": ["a:1"], "chief": ["c:1", "d:1"]}"#);
        assert_eq!(
            is_chief(&s, "master", 0).unwrap_err().to_string(),
            "Unrecognized task_type: master, valid task types are: ('chief', 'worker', \
             'evaluator', 'ps', None)"
        );
        assert_eq!(
            is_chief(&s, "ps", 0).unwrap_err().to_string(),
            "`task_type` 'ps' not found in cluster_spec."
        );
        assert!(matches!(
            is_chief(&s, "worker", 0),
            Err(Error::TooManyChiefs { count: 2 })
        ));
    }

    #[test]
    fn evaluator_may_be_outside_the_cluster() {
        let s = spec(r#"{"worker": ["a:1", "b:1"]}"#);
        assert!(is_chief(&s, "evaluator", 0).unwrap());
        assert_eq!(id_in_cluster(&s, "evaluator", 3).unwrap(), 3);
        assert_eq!(collective_leader(&s, "evaluator", 0).unwrap(), "");
        assert_eq!(
            worker_count(&s, "evaluator").unwrap_err().to_string(),
            "No such job in cluster: 'evaluator'"
        );
        assert!(matches!(
            id_in_cluster(&s, "evaluator", None),
            Err(Error::MissingTaskId { .. })
        ));
    }

    #[test]
    fn sparse_jobs_compare_ids_with_task_counts_as_tensorflow() {
        let s = spec(r#"{"worker": {"0": "a:1", "5": "b:1"}}"#);
        assert!(matches!(
            is_chief(&s, "worker", 5),
            Err(Error::TaskIdOutOfRange {
                task_id: 5,
                num_tasks: 2,
                ..
            })
        ));
    }

    #[test]
    fn no_task_type() {
        let s = spec(r#"{"worker": ["a:1"]}"#);
        assert!(!is_chief(&s, None, None).unwrap());
        assert_eq!(
            worker_count(&s, None).unwrap_err().to_string(),
            "Unexpected `task_type` None"
        );
        assert_eq!(
            id_in_cluster(&s, None, 0).unwrap_err().to_string(),
            "There is no id for task_type None"
        );
        assert_eq!(
            collective_leader(&s, None, None).unwrap(),
            "/job:worker/replica:0/task:0"
        );
    }

    #[test]
    fn leaders_need_a_leading_job() {
        let s = spec(r#"{"ps": ["a:1"]}"#);
        assert_eq!(
            collective_leader(&s, "ps", 0).unwrap_err().to_string(),
            "cluster spec ClusterSpec({'ps': ['a:1']}) has no 'chief' or 'worker' job to lead \
             collective ops"
        );
        assert_eq!(coordination_leader(&s).unwrap(), "/job:ps/replica:0/task:0");
        assert_eq!(coordination_leader(&ClusterSpec::empty()).unwrap(), "");
        let s = spec(r#"{"evaluator": ["a:1"]}"#);
        assert!(coordination_leader(&s).is_err());
    }

    #[test]
    fn empty_jobs_have_no_task_zero() {
        let s = spec(r#"{"worker": []}"#);
        assert!(matches!(
            worker_count(&s, "worker"),
            Err(Error::TaskIdOutOfRange {
                task_id: 0,
                num_tasks: 0,
                ..
            })
        ));
    }
}
