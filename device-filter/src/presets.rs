//! Filters TensorFlow's own strategies set.

use cluster_spec::ClusterSpec;

use crate::filters::DeviceFilter;
use crate::{ClusterDeviceFilters, DeviceName};

/// A filter that names only a job (`/job:<job>`), built without parsing.
fn job_filter(job: &str) -> DeviceFilter {
    DeviceFilter::new_unchecked(
        format!("/job:{job}"),
        DeviceName {
            job: Some(job.into()),
            ..DeviceName::default()
        },
    )
}

impl ClusterDeviceFilters {
    /// The filters `tf.distribute.experimental.ParameterServerStrategy` sets when it connects
    /// (`parameter_server_strategy_v2.py`, `_connect_to_cluster(coordinator_name="chief")`):
    ///
    /// - every `worker` task: `["/job:ps", "/job:chief"]`;
    /// - every `ps` task: `["/job:worker", "/job:chief"]`;
    /// - no other task has filters (the chief, an evaluator or any other job sees everything).
    ///
    /// As in TensorFlow, `/job:chief` is set whether or not the spec has a chief, and nothing is
    /// set for a job the spec does not have. Unlike TensorFlow, which sets filters for task
    /// indices `0..len(job)`, the task indices are the ones the spec defines, so a sparse job
    /// (`{"ps": {"3": …}}`) gets its filters on task 3. TensorFlow's strategy also refuses a
    /// cluster without a `ps` or a `worker` task; this preset leaves that check to the caller.
    ///
    /// ```
    /// use cluster_spec::ClusterSpec;
    /// use device_filter::ClusterDeviceFilters;
    ///
    /// let spec = ClusterSpec::from_json(
    ///     r#"{"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1"]}"#,
    /// ).unwrap();
    /// let filters = ClusterDeviceFilters::parameter_server(&spec);
    /// assert_eq!(
    ///     serde_json::to_string(&filters).unwrap(),
    ///     r#"{"ps":{"0":["/job:worker","/job:chief"]},"worker":{"0":["/job:ps","/job:chief"],"1":["/job:ps","/job:chief"]}}"#
    /// );
    /// ```
    pub fn parameter_server(spec: &ClusterSpec) -> Self {
        let mut filters = Self::new();
        for (job, visible) in [("worker", ["ps", "chief"]), ("ps", ["worker", "chief"])] {
            let Ok(tasks) = spec.task_indices(job) else {
                continue;
            };
            let entry = filters.jobs.entry(job.to_owned()).or_default();
            for task in tasks {
                entry.insert(task, visible.iter().map(|j| job_filter(j)).collect());
            }
        }
        filters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_jobs_use_their_indices_and_missing_jobs_are_skipped() {
        let spec = ClusterSpec::builder()
            .sparse_job("ps", [(3, "p:3")])
            .job("evaluator", ["e:1"])
            .build()
            .unwrap();
        let filters = ClusterDeviceFilters::parameter_server(&spec);
        let texts: Vec<_> = filters
            .filters("ps", 3)
            .iter()
            .map(|f| f.as_str())
            .collect();
        assert_eq!(texts, ["/job:worker", "/job:chief"]);
        assert!(filters.filters("ps", 0).is_empty());
        assert_eq!(filters.iter().count(), 1);
        // The preset equals the same filters set through the validating API.
        let mut same = ClusterDeviceFilters::new();
        same.set_device_filters("ps", 3, ["/job:worker", "/job:chief"])
            .unwrap();
        assert_eq!(filters, same);
    }
}
