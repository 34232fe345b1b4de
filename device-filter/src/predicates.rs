//! TensorFlow's matching predicates and merges on [`DeviceName`]s (C++ `DeviceNameUtils`).

use crate::DeviceName;
use crate::error::Error;

/// True when both sides set the part and the values differ.
fn conflict<T: PartialEq + ?Sized>(a: Option<&T>, b: Option<&T>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a != b)
}

/// True when `less` does not set the part, or `more` sets it to the same value.
fn specifies<T: PartialEq + ?Sized>(less: Option<&T>, more: Option<&T>) -> bool {
    less.is_none() || less == more
}

impl DeviceName {
    /// TensorFlow's `AreCompatibleDevNames`: for each part, unset on either side or equal.
    ///
    /// This is the test a device filter applies to a device: `/job:ps` is compatible with every
    /// device of job `ps` (and with every device that has no job). It is symmetric.
    ///
    /// ```
    /// # use device_filter::DeviceName;
    /// let filter: DeviceName = "/job:ps".parse()?;
    /// assert!(filter.is_compatible_with(&"/job:ps/replica:0/task:3/device:CPU:0".parse()?));
    /// assert!(!filter.is_compatible_with(&"/job:worker/replica:0/task:0/device:CPU:0".parse()?));
    /// # Ok::<(), device_filter::Error>(())
    /// ```
    pub fn is_compatible_with(&self, other: &DeviceName) -> bool {
        !(conflict(self.job.as_deref(), other.job.as_deref())
            || conflict(self.replica.as_ref(), other.replica.as_ref())
            || conflict(self.task.as_ref(), other.task.as_ref())
            || conflict(self.device_type.as_deref(), other.device_type.as_deref())
            || conflict(self.id.as_ref(), other.id.as_ref()))
    }

    /// TensorFlow's `IsSameAddressSpace`: job, replica and task are set on both sides and equal
    /// (the two names are on the same task).
    pub fn is_same_address_space(&self, other: &DeviceName) -> bool {
        self.job.is_some()
            && self.replica.is_some()
            && self.task.is_some()
            && self.job == other.job
            && self.replica == other.replica
            && self.task == other.task
    }

    /// TensorFlow's `IsSpecification(less_specific, self)`: every part set in `less_specific` is
    /// set in `self` to the same value.
    pub fn is_specification_of(&self, less_specific: &DeviceName) -> bool {
        specifies(less_specific.job.as_deref(), self.job.as_deref())
            && specifies(less_specific.replica.as_ref(), self.replica.as_ref())
            && specifies(less_specific.task.as_ref(), self.task.as_ref())
            && specifies(
                less_specific.device_type.as_deref(),
                self.device_type.as_deref(),
            )
            && specifies(less_specific.id.as_ref(), self.id.as_ref())
    }

    /// The task this name is on, `/job:J/replica:R/task:T`, when job, replica and task are all
    /// set (TensorFlow's `GetTaskName`); `None` otherwise.
    pub fn task_prefix(&self) -> Option<DeviceName> {
        match (&self.job, self.replica, self.task) {
            (Some(job), Some(replica), Some(task)) => Some(DeviceName {
                job: Some(job.clone()),
                replica: Some(replica),
                task: Some(task),
                device_type: None,
                id: None,
            }),
            _ => None,
        }
    }

    /// TensorFlow's `MergeDevNames` without soft placement: the parts `other` sets are copied
    /// into a copy of `self`.
    ///
    /// # Errors
    ///
    /// [`Error::IncompatibleMerge`] when both set a part to different values (TensorFlow's
    /// `Cannot merge devices with incompatible jobs: '…' and '…'`).
    pub fn merge(&self, other: &DeviceName) -> Result<DeviceName, Error> {
        let fail = |field| Error::IncompatibleMerge {
            field,
            target: self.to_string(),
            other: other.to_string(),
        };
        if conflict(self.job.as_deref(), other.job.as_deref()) {
            return Err(fail("jobs"));
        }
        if conflict(self.replica.as_ref(), other.replica.as_ref()) {
            return Err(fail("replicas"));
        }
        if conflict(self.task.as_ref(), other.task.as_ref()) {
            return Err(fail("tasks"));
        }
        if conflict(self.device_type.as_deref(), other.device_type.as_deref()) {
            return Err(fail("types"));
        }
        if conflict(self.id.as_ref(), other.id.as_ref()) {
            return Err(fail("ids"));
        }
        Ok(self.merge_override(other))
    }

    /// TensorFlow's `MergeOverrideDevNames`: every part `other` sets replaces `self`'s.
    pub fn merge_override(&self, other: &DeviceName) -> DeviceName {
        DeviceName {
            job: other.job.clone().or_else(|| self.job.clone()),
            replica: other.replica.or(self.replica),
            task: other.task.or(self.task),
            device_type: other
                .device_type
                .clone()
                .or_else(|| self.device_type.clone()),
            id: other.id.or(self.id),
        }
    }

    /// TensorFlow's `MergeUnsetDevNames`: parts unset in `self` are filled from `other`.
    pub fn merge_unset(&self, other: &DeviceName) -> DeviceName {
        other.merge_override(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> DeviceName {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn compatibility_is_per_part() {
        assert!(n("/job:ps").is_compatible_with(&n("/job:ps/replica:0/task:1/device:CPU:0")));
        assert!(n("").is_compatible_with(&n("/job:a/device:GPU:0")));
        assert!(n("/device:GPU:0").is_compatible_with(&n("/job:a/task:3/device:GPU:0")));
        assert!(!n("/device:GPU:0").is_compatible_with(&n("/job:a/device:GPU:1")));
        assert!(!n("/device:cpu:0").is_compatible_with(&n("/device:CPU:0")));
        assert!(n("/job:worker/replica:3").is_compatible_with(&n("/job:worker/task:0")));
    }

    #[test]
    fn address_space_needs_job_replica_task() {
        let a = n("/job:w/replica:0/task:1/device:CPU:0");
        assert!(a.is_same_address_space(&n("/job:w/replica:0/task:1/device:GPU:3")));
        assert!(a.is_same_address_space(&n("/job:w/replica:0/task:1")));
        assert!(!a.is_same_address_space(&n("/job:w/task:1/device:CPU:0")));
        assert!(!n("/job:w/task:1").is_same_address_space(&n("/job:w/task:1")));
        assert!(!a.is_same_address_space(&n("/job:w/replica:1/task:1/device:CPU:0")));
    }

    #[test]
    fn specification() {
        assert!(n("/job:a/replica:0/task:0/device:CPU:0").is_specification_of(&n("/job:a")));
        assert!(!n("/job:a").is_specification_of(&n("/job:a/task:0")));
        assert!(n("/job:a").is_specification_of(&n("")));
    }

    #[test]
    fn task_prefix() {
        assert_eq!(
            n("/job:foo/cpu:1/task:2/replica:1").task_prefix(),
            Some(n("/job:foo/replica:1/task:2"))
        );
        assert_eq!(n("/job:foo/task:2").task_prefix(), None);
    }

    #[test]
    fn merges() {
        assert_eq!(
            n("/job:a/device:GPU:0").merge(&n("/task:3")).unwrap(),
            n("/job:a/task:3/device:GPU:0")
        );
        assert_eq!(
            n("/job:a/device:CPU:0")
                .merge(&n("/job:b"))
                .unwrap_err()
                .to_string(),
            "Cannot merge devices with incompatible jobs: '/job:a/device:CPU:0' and '/job:b'"
        );
        assert!(matches!(
            n("/device:CPU:0").merge(&n("/device:CPU:1")),
            Err(Error::IncompatibleMerge { field: "ids", .. })
        ));
        assert_eq!(
            n("/job:a/device:CPU:0").merge_override(&n("/job:b/task:1")),
            n("/job:b/task:1/device:CPU:0")
        );
        assert_eq!(
            n("/job:a/device:CPU:0").merge_unset(&n("/job:b/task:1")),
            n("/job:a/task:1/device:CPU:0")
        );
    }
}
