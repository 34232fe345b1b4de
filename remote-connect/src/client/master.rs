//! The master task of a resolver's cluster, found as TensorFlow's `connect_to_cluster` finds it
//! to make its CPU the default device.

use cluster_spec::ClusterSpec;

use crate::TaskId;
use crate::error::Error;

/// TensorFlow's rule: for each job in the spec's order, the first task (ascending) whose
/// address contains `master` or is contained in it (substring, both ways); the **last** job
/// with such a task wins.
pub(crate) fn find(spec: &ClusterSpec, master: &str) -> Result<TaskId, Error> {
    let mut found = None;
    for job in spec.jobs() {
        for (task, address) in spec.tasks(job)? {
            if address.contains(master) || master.contains(address) {
                found = Some(TaskId::new(job, task));
                break;
            }
        }
    }
    found.ok_or_else(|| Error::MasterNotFound(master.to_owned()))
}

/// The master's CPU, TensorFlow's `device_util.canonicalize("/job:J/replica:0/task:T")`.
pub(crate) fn default_device(task: &TaskId) -> String {
    format!("{task}/device:CPU:0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_matching_job_wins_first_task_within() {
        let spec = ClusterSpec::from_json(
            r#"{"chief": ["h1:2222"], "worker": ["h2:2222", "h1:2222", "h1:2222"]}"#,
        )
        .unwrap();
        assert_eq!(
            find(&spec, "grpc://h1:2222").unwrap(),
            TaskId::new("worker", 1)
        );
        assert_eq!(find(&spec, "h2:2222").unwrap(), TaskId::new("worker", 0));
        assert_eq!(
            find(&spec, "grpc://nowhere:1").unwrap_err().to_string(),
            "`make_master_device_default` is set to True but cannot find master grpc://nowhere:1 in the cluster"
        );
    }
}
