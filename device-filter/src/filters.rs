//! [`ClusterDeviceFilters`]: which devices each task may see, and its proto and JSON forms.

use std::collections::BTreeMap;
use std::fmt;

use crate::DeviceName;
use crate::error::Error;
use crate::grammar;
use crate::tokens::{self, MAX_INDEX};

/// One device filter of a task: the text as given and its parsed [`DeviceName`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DeviceFilter {
    text: Box<str>,
    name: DeviceName,
}

impl DeviceFilter {
    /// A filter from text and the name it parses to; the caller vouches that they agree.
    pub(crate) fn new_unchecked(text: String, name: DeviceName) -> Self {
        Self {
            text: text.into(),
            name,
        }
    }

    /// The filter as it was given (and as it goes into the proto), e.g. `/job:ps`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parsed filter.
    pub fn device_name(&self) -> &DeviceName {
        &self.name
    }
}

impl fmt::Display for DeviceFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for DeviceFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text, f)
    }
}

/// The device filters of a cluster: for some tasks, the devices they may see (TensorFlow's
/// `tf.config.experimental.ClusterDeviceFilters`, sent as `ServerDef.cluster_device_filters`).
///
/// A task without filters sees every device of the cluster. A task with filters sees the devices
/// of its own task and every device that at least one of its filters is compatible with (see
/// [`is_visible`](Self::is_visible)).
///
/// Jobs and tasks are kept sorted, as TensorFlow writes them into the proto. Filters keep the
/// text they were given with (so `/cpu:0` stays `/cpu:0` in the proto, as in TensorFlow) and
/// are validated when they are set. Equality compares that text.
///
/// The JSON form ([`serde`]) maps job → task index → filters:
/// `{"ps": {"0": ["/job:worker"]}, "worker": {"0": ["/job:ps"], "1": ["/job:ps"]}}`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClusterDeviceFilters {
    /// job → task → filters. A job stays (with no tasks) once any task of it was set, even with
    /// an empty list, because TensorFlow's proto then still lists the job.
    pub(crate) jobs: BTreeMap<String, BTreeMap<u32, Vec<DeviceFilter>>>,
}

impl ClusterDeviceFilters {
    /// No filters: every task sees every device.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the filters of task `task` of job `job`, replacing any set before. An empty list
    /// means "no filters" (the task sees every device) and leaves the task out of the proto, as
    /// TensorFlow does.
    ///
    /// # Errors
    ///
    /// Checked here, where TensorFlow only fails when it connects:
    /// [`Error::InvalidJobName`] unless `job` is `[A-Za-z][A-Za-z0-9_]*`;
    /// [`Error::TaskIndexOutOfRange`] above 2^31 − 1 (the proto's `int32`);
    /// [`Error::InvalidFilter`] for the first filter that does not parse as a device name.
    /// On error nothing changes.
    pub fn set_device_filters<I, S>(
        &mut self,
        job: &str,
        task: u32,
        filters: I,
    ) -> Result<(), Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        tokens::check_job_name(job).map_err(|reason| Error::InvalidJobName {
            job: job.to_owned(),
            reason,
        })?;
        if task > MAX_INDEX {
            return Err(Error::TaskIndexOutOfRange {
                job: job.to_owned(),
                task: i64::from(task),
            });
        }
        let parsed = filters
            .into_iter()
            .map(|filter| {
                let text = filter.as_ref();
                grammar::parse_full_name(text)
                    .map(|name| DeviceFilter {
                        text: text.into(),
                        name,
                    })
                    .map_err(|(position, reason)| Error::InvalidFilter {
                        job: job.to_owned(),
                        task,
                        filter: text.to_owned(),
                        position,
                        reason,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tasks = self.jobs.entry(job.to_owned()).or_default();
        if parsed.is_empty() {
            tasks.remove(&task);
        } else {
            tasks.insert(task, parsed);
        }
        Ok(())
    }

    /// The filters of a task; empty when it has none (it sees every device).
    pub fn filters(&self, job: &str, task: u32) -> &[DeviceFilter] {
        self.jobs
            .get(job)
            .and_then(|tasks| tasks.get(&task))
            .map_or(&[], Vec::as_slice)
    }

    /// Every task that has filters, jobs and tasks in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32, &[DeviceFilter])> {
        self.jobs.iter().flat_map(|(job, tasks)| {
            tasks
                .iter()
                .map(move |(task, filters)| (job.as_str(), *task, filters.as_slice()))
        })
    }

    /// True when no task has filters (and no job is listed): the proto is empty.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The proto TensorFlow sends in `ServerDef.cluster_device_filters`: jobs sorted by name,
    /// tasks by index, filters as given, tasks with no filters left out — the same message
    /// TensorFlow's `ClusterDeviceFilters._as_cluster_device_filters()` builds.
    pub fn to_proto(&self) -> cluster_proto::ClusterDeviceFilters {
        cluster_proto::ClusterDeviceFilters {
            jobs: self
                .jobs
                .iter()
                .map(|(job, tasks)| cluster_proto::JobDeviceFilters {
                    name: job.clone(),
                    tasks: tasks
                        .iter()
                        .map(|(task, filters)| {
                            let device_filters =
                                filters.iter().map(|f| f.as_str().to_owned()).collect();
                            // Task indices are at most 2^31 - 1, checked when set.
                            (
                                *task as i32,
                                cluster_proto::TaskDeviceFilters { device_filters },
                            )
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl fmt::Debug for ClusterDeviceFilters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.jobs.iter()).finish()
    }
}

impl TryFrom<cluster_proto::ClusterDeviceFilters> for ClusterDeviceFilters {
    type Error = Error;

    /// Validates a proto as [`set_device_filters`](ClusterDeviceFilters::set_device_filters)
    /// does. A task entry with no filters means "no filters" and is dropped.
    ///
    /// # Errors
    ///
    /// Those of `set_device_filters`, [`Error::TaskIndexOutOfRange`] for a negative index, and
    /// [`Error::DuplicateJob`] when a job is listed twice.
    fn try_from(proto: cluster_proto::ClusterDeviceFilters) -> Result<Self, Error> {
        let mut filters = Self::new();
        for job in proto.jobs {
            if filters.jobs.contains_key(&job.name) {
                return Err(Error::DuplicateJob { job: job.name });
            }
            tokens::check_job_name(&job.name).map_err(|reason| Error::InvalidJobName {
                job: job.name.clone(),
                reason,
            })?;
            filters.jobs.entry(job.name.clone()).or_default();
            for (task, task_filters) in job.tasks {
                let task = u32::try_from(task).map_err(|_| Error::TaskIndexOutOfRange {
                    job: job.name.clone(),
                    task: i64::from(task),
                })?;
                filters.set_device_filters(&job.name, task, &task_filters.device_filters)?;
            }
        }
        Ok(filters)
    }
}

impl From<&ClusterDeviceFilters> for cluster_proto::ClusterDeviceFilters {
    fn from(filters: &ClusterDeviceFilters) -> Self {
        filters.to_proto()
    }
}

/// The JSON shape: job → task index (a string key in JSON) → filters.
type JsonForm = BTreeMap<String, BTreeMap<u32, Vec<String>>>;

impl serde::Serialize for ClusterDeviceFilters {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;

        /// One job's tasks, serialised as task → list of filter texts.
        struct Tasks<'a>(&'a BTreeMap<u32, Vec<DeviceFilter>>);

        impl serde::Serialize for Tasks<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_map(self.0.iter().map(|(task, filters)| {
                    (
                        task,
                        filters.iter().map(DeviceFilter::as_str).collect::<Vec<_>>(),
                    )
                }))
            }
        }

        let mut map = serializer.serialize_map(Some(self.jobs.len()))?;
        for (job, tasks) in &self.jobs {
            map.serialize_entry(job, &Tasks(tasks))?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for ClusterDeviceFilters {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = JsonForm::deserialize(deserializer)?;
        let mut filters = Self::new();
        for (job, tasks) in raw {
            tokens::check_job_name(&job)
                .map_err(|reason| Error::InvalidJobName {
                    job: job.clone(),
                    reason,
                })
                .map_err(serde::de::Error::custom)?;
            filters.jobs.entry(job.clone()).or_default();
            for (task, list) in tasks {
                filters
                    .set_device_filters(&job, task, list)
                    .map_err(serde::de::Error::custom)?;
            }
        }
        Ok(filters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_call_replaces_and_empty_clears() {
        let mut f = ClusterDeviceFilters::new();
        f.set_device_filters("worker", 0, ["/job:ps"]).unwrap();
        f.set_device_filters("worker", 0, ["/job:chief", "/cpu:0"])
            .unwrap();
        let texts: Vec<_> = f.filters("worker", 0).iter().map(|x| x.as_str()).collect();
        assert_eq!(texts, ["/job:chief", "/cpu:0"]);
        f.set_device_filters("worker", 0, Vec::<String>::new())
            .unwrap();
        assert!(f.filters("worker", 0).is_empty());
        // The job stays listed, with no tasks, as in TensorFlow's proto.
        assert_eq!(f.to_proto().jobs.len(), 1);
        assert!(f.to_proto().jobs[0].tasks.is_empty());
    }

    #[test]
    fn errors_leave_the_filters_unchanged() {
        let mut f = ClusterDeviceFilters::new();
        f.set_device_filters("worker", 0, ["/job:ps"]).unwrap();
        let before = f.clone();
        let err = f
            .set_device_filters("worker", 0, ["/job:ps", "/job:1x"])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid filter: \"/job:1x\" for /job:worker/task:0: job name must start with a \
             letter, found '1' (offset 5)"
        );
        assert!(f.set_device_filters("a-b", 0, ["/job:ps"]).is_err());
        assert!(matches!(
            f.set_device_filters("w", 1 << 31, ["/job:ps"]),
            Err(Error::TaskIndexOutOfRange {
                task: 2147483648,
                ..
            })
        ));
        assert_eq!(f, before);
    }

    #[test]
    fn proto_is_sorted() {
        let mut f = ClusterDeviceFilters::new();
        f.set_device_filters("worker", 2, ["/job:ps"]).unwrap();
        f.set_device_filters("ps", 0, ["/job:worker"]).unwrap();
        f.set_device_filters("worker", 1, ["/job:ps"]).unwrap();
        let proto = f.to_proto();
        let names: Vec<_> = proto.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["ps", "worker"]);
        let tasks: Vec<_> = proto.jobs[1].tasks.keys().copied().collect();
        assert_eq!(tasks, [1, 2]);
        assert_eq!(ClusterDeviceFilters::try_from(proto).unwrap(), f);
    }

    #[test]
    fn proto_errors() {
        let job = |name: &str, task: i32, filter: &str| cluster_proto::JobDeviceFilters {
            name: name.into(),
            tasks: [(
                task,
                cluster_proto::TaskDeviceFilters {
                    device_filters: vec![filter.into()],
                },
            )]
            .into(),
        };
        let from =
            |jobs| ClusterDeviceFilters::try_from(cluster_proto::ClusterDeviceFilters { jobs });
        assert!(matches!(
            from(vec![job("w", -1, "/job:ps")]),
            Err(Error::TaskIndexOutOfRange { task: -1, .. })
        ));
        assert!(matches!(
            from(vec![job("w", 0, "/job:ps"), job("w", 1, "/job:ps")]),
            Err(Error::DuplicateJob { .. })
        ));
        assert!(matches!(
            from(vec![job("", 0, "/job:ps")]),
            Err(Error::InvalidJobName { .. })
        ));
        assert!(matches!(
            from(vec![job("w", 0, "job:ps")]),
            Err(Error::InvalidFilter { .. })
        ));
    }

    #[test]
    fn json_form() {
        let f: ClusterDeviceFilters =
            serde_json::from_str(r#"{"worker": {"0": ["/job:ps"], "3": []}, "ps": {}}"#).unwrap();
        assert_eq!(f.filters("worker", 0)[0].as_str(), "/job:ps");
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"ps":{},"worker":{"0":["/job:ps"]}}"#
        );
        let err = serde_json::from_str::<ClusterDeviceFilters>(r#"{"worker": {"0": ["/job:"]}}"#)
            .unwrap_err();
        assert!(
            err.to_string().starts_with("Invalid filter: \"/job:\""),
            "{err}"
        );
        assert!(serde_json::from_str::<ClusterDeviceFilters>(r#"{"worker": {"x": []}}"#).is_err());
    }
}
