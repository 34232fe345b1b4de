//! TensorFlow's `master()` rule for a TF_CONFIG document, shared by the TF_CONFIG and
//! SageMaker resolvers (TensorFlow's two copies of it are identical).

use cluster_spec::ClusterSpec;

use super::TfConfig;
use crate::{Error, format_master_url};

impl TfConfig {
    /// The session master, as TensorFlow's `TFConfigClusterResolver.master`:
    ///
    /// 1. `session_master`, if set, verbatim (no RPC prefix, arguments ignored);
    /// 2. `""` if the cluster has no jobs, or one job whose task list (`job_tasks`, holes of a
    ///    sparse job included) has length 1 — a single process needs no master;
    /// 3. else the address of task (`task_type` else `task.type`, `task_id` else
    ///    `task.index`), prefixed `"<layer>://"` with `rpc_layer` else the document's.
    ///
    /// A missing task type or index is [`Error::TfConfigNoTask`]; a task not in the cluster is
    /// TensorFlow's `No such job in cluster` / `No task with index` error.
    ///
    /// ```
    /// use cluster_resolver::TfConfig;
    ///
    /// let config = TfConfig::from_json(r#"{
    ///     "cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]},
    ///     "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"
    /// }"#)?;
    /// assert_eq!(config.master(None, None, None)?, "grpc://w1:1");
    /// assert_eq!(config.master(Some("chief"), Some(0), Some(""))?, "c:1");
    ///
    /// let single = TfConfig::from_json(r#"{"cluster": {"worker": ["w0:1"]}}"#)?;
    /// assert_eq!(single.master(None, None, None)?, "");
    /// # Ok::<(), cluster_resolver::Error>(())
    /// ```
    pub fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, Error> {
        if let Some(master) = &self.session_master {
            return Ok(master.clone());
        }
        if is_single_process(&self.cluster) {
            return Ok(String::new());
        }
        // TensorFlow looks the job up before the index, so its errors come in that order.
        let job = task_type
            .or(self.task_type.as_deref())
            .ok_or(Error::TfConfigNoTask { field: "task.type" })?;
        self.cluster.task_indices(job)?;
        let task = task_id.or(self.task_id).ok_or(Error::TfConfigNoTask {
            field: "task.index",
        })?;
        let layer = rpc_layer.or(self.rpc_layer.as_deref());
        Ok(format_master_url(
            self.cluster.task_address(job, task)?,
            layer,
        ))
    }
}

/// TensorFlow's "we are the only job" test: no jobs, or one job whose `job_tasks` list has
/// length 1 (a dense job of one task, or a sparse job whose only task is task 0). TensorFlow
/// fails on a single job with no tasks (`max()` of nothing); that falls through here.
fn is_single_process(spec: &ClusterSpec) -> bool {
    match spec.jobs()[..] {
        [] => true,
        [job] => spec
            .task_indices(job)
            .is_ok_and(|indices| indices.last() == Some(&0)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> TfConfig {
        TfConfig::from_json(json).unwrap()
    }

    #[test]
    fn session_master_wins_over_everything() {
        let c = config(r#"{"session_master": "s:1", "cluster": {"w": ["a:1", "b:1"]}}"#);
        assert_eq!(c.master(Some("w"), Some(1), Some("grpc")).unwrap(), "s:1");
    }

    #[test]
    fn single_process_clusters_have_no_master() {
        assert_eq!(config("{}").master(None, None, None).unwrap(), "");
        assert_eq!(
            config(r#"{"cluster": {"w": {"0": "a:1"}}}"#)
                .master(Some("x"), Some(9), None)
                .unwrap(),
            ""
        );
        // A sparse job {3: a} lists as [None, None, None, a]: length 4, not single.
        let c = config(r#"{"cluster": {"w": {"3": "a:1"}}, "task": {"type": "w", "index": 3}}"#);
        assert_eq!(c.master(None, None, None).unwrap(), "a:1");
    }

    #[test]
    fn missing_task_parts_are_named_in_tensorflows_order() {
        let c = config(r#"{"cluster": {"w": ["a:1", "b:1"]}}"#);
        assert_eq!(
            c.master(None, Some(0), None).unwrap_err().to_string(),
            "master() needs a task: no task.type was given and TF_CONFIG has none"
        );
        assert_eq!(
            c.master(Some("x"), None, None).unwrap_err().to_string(),
            "No such job in cluster: 'x'"
        );
        assert_eq!(
            c.master(Some("w"), None, None).unwrap_err().to_string(),
            "master() needs a task: no task.index was given and TF_CONFIG has none"
        );
        assert_eq!(
            c.master(Some("w"), Some(2), None).unwrap_err().to_string(),
            "No task with index 2 in job 'w'"
        );
    }

    #[test]
    fn arguments_override_the_document() {
        let c = config(
            r#"{"cluster": {"w": ["a:1", "b:1"]}, "task": {"type": "w", "index": 0},
                "rpc_layer": "grpc"}"#,
        );
        assert_eq!(c.master(None, None, None).unwrap(), "grpc://a:1");
        assert_eq!(c.master(None, Some(1), None).unwrap(), "grpc://b:1");
        assert_eq!(c.master(None, None, Some("x")).unwrap(), "x://a:1");
        assert_eq!(c.master(None, None, Some("")).unwrap(), "a:1");
    }
}
