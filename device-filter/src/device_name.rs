//! [`DeviceName`]: a parsed, possibly partial TensorFlow device name.

use std::fmt;

use crate::error::Error;
use crate::tokens::{self, MAX_INDEX};

/// A TensorFlow device name such as `/job:worker/replica:0/task:1/device:GPU:0`, fully or
/// partially specified: TensorFlow's C++ `DeviceNameUtils::ParsedName`.
///
/// Each of the five parts (job, replica, task, device type, device id) is either set or unset;
/// an unset part (left out, or written `*`) matches anything. Parsing
/// ([`FromStr`](std::str::FromStr)) follows the C++ `ParseFullName` grammar, the one
/// TensorFlow's runtime applies to device filters:
///
/// - `/job:J/replica:R/task:T/device:TYPE:ID`, any subset of the parts, in any order; a part
///   given twice keeps the later value; `""` and `"/"` are the all-unset name;
/// - `*` for any part means unset: `/job:*`, `/device:GPU:*`, `/device:*:3`;
/// - the legacy forms `/cpu:0`, `/CPU:0`, `/gpu:1`, `/GPU:*` mean type `CPU` or `GPU`; any other
///   spelling keeps its case (`/device:cpu:3` has type `cpu`, which is not `CPU`);
/// - job names and device types are `[A-Za-z][A-Za-z0-9_]*`; replica, task and id are decimal
///   numbers up to 2^31 − 1 (leading zeros allowed: `/task:01` is task 1).
///
/// [`Display`](fmt::Display) writes the canonical form, `/job:J/replica:R/task:T/device:TYPE:ID`
/// in that order with unset parts left out (a type without an id is written `TYPE:*`, an id
/// without a type `*:ID`); it never writes a legacy form. Parsing what `Display` wrote gives the
/// same name back.
///
/// ```
/// use device_filter::DeviceName;
///
/// let name: DeviceName = "/task:1/job:worker/gpu:0".parse()?;
/// assert_eq!(name.job(), Some("worker"));
/// assert_eq!(name.replica(), None);
/// assert_eq!(name.device_type(), Some("GPU"));
/// assert_eq!(name.to_string(), "/job:worker/task:1/device:GPU:0");
///
/// let err = "/job:1x/task:0".parse::<DeviceName>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid device name \"/job:1x/task:0\": job name must start with a letter, found '1' (offset 5)"
/// );
/// # Ok::<(), device_filter::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceName {
    pub(crate) job: Option<Box<str>>,
    pub(crate) replica: Option<u32>,
    pub(crate) task: Option<u32>,
    pub(crate) device_type: Option<Box<str>>,
    pub(crate) id: Option<u32>,
}

impl DeviceName {
    /// The all-unset name (`""`), which is compatible with every device.
    pub fn new() -> Self {
        Self::default()
    }

    /// The name of a task as TensorFlow keys device filters: `/job:J/replica:0/task:T`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidJobName`] or [`Error::ValueOutOfRange`].
    pub fn for_task(job: &str, task: u32) -> Result<Self, Error> {
        Self::new().with_job(job)?.with_replica(0)?.with_task(task)
    }

    /// A fully specified name, TensorFlow's `DeviceNameUtils::FullName`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidJobName`], [`Error::InvalidDeviceType`] or [`Error::ValueOutOfRange`].
    pub fn full(
        job: &str,
        replica: u32,
        task: u32,
        device_type: &str,
        id: u32,
    ) -> Result<Self, Error> {
        Self::new()
            .with_job(job)?
            .with_replica(replica)?
            .with_task(task)?
            .with_device_type(device_type)?
            .with_id(id)
    }

    /// The job, if set.
    pub fn job(&self) -> Option<&str> {
        self.job.as_deref()
    }

    /// The replica, if set.
    pub fn replica(&self) -> Option<u32> {
        self.replica
    }

    /// The task index, if set.
    pub fn task(&self) -> Option<u32> {
        self.task
    }

    /// The device type (`CPU`, `GPU`, `TPU`, …), if set. Case is kept as written, except that
    /// the legacy forms give `CPU` and `GPU`.
    pub fn device_type(&self) -> Option<&str> {
        self.device_type.as_deref()
    }

    /// The device id (TensorFlow's `id`, Python's `device_index`), if set.
    pub fn id(&self) -> Option<u32> {
        self.id
    }

    /// Sets the job.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidJobName`] unless `job` is `[A-Za-z][A-Za-z0-9_]*`.
    pub fn with_job(mut self, job: &str) -> Result<Self, Error> {
        tokens::check_job_name(job).map_err(|reason| Error::InvalidJobName {
            job: job.to_owned(),
            reason,
        })?;
        self.job = Some(job.into());
        Ok(self)
    }

    /// Sets the replica.
    ///
    /// # Errors
    ///
    /// [`Error::ValueOutOfRange`] above 2^31 − 1.
    pub fn with_replica(mut self, replica: u32) -> Result<Self, Error> {
        self.replica = Some(in_range("replica", replica)?);
        Ok(self)
    }

    /// Sets the task index.
    ///
    /// # Errors
    ///
    /// [`Error::ValueOutOfRange`] above 2^31 − 1.
    pub fn with_task(mut self, task: u32) -> Result<Self, Error> {
        self.task = Some(in_range("task", task)?);
        Ok(self)
    }

    /// Sets the device type.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDeviceType`] unless `device_type` is `[A-Za-z][A-Za-z0-9_]*`.
    pub fn with_device_type(mut self, device_type: &str) -> Result<Self, Error> {
        tokens::check_device_type(device_type).map_err(|reason| Error::InvalidDeviceType {
            device_type: device_type.to_owned(),
            reason,
        })?;
        self.device_type = Some(device_type.into());
        Ok(self)
    }

    /// Sets the device id.
    ///
    /// # Errors
    ///
    /// [`Error::ValueOutOfRange`] above 2^31 − 1.
    pub fn with_id(mut self, id: u32) -> Result<Self, Error> {
        self.id = Some(in_range("device id", id)?);
        Ok(self)
    }

    /// True when all five parts are set (a concrete device, not a pattern).
    pub fn is_fully_specified(&self) -> bool {
        self.job.is_some()
            && self.replica.is_some()
            && self.task.is_some()
            && self.device_type.is_some()
            && self.id.is_some()
    }

    /// True when no part is set: the name `""`, compatible with everything.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

fn in_range(field: &'static str, value: u32) -> Result<u32, Error> {
    if value <= MAX_INDEX {
        Ok(value)
    } else {
        Err(Error::ValueOutOfRange { field, value })
    }
}

impl TryFrom<&str> for DeviceName {
    type Error = Error;

    fn try_from(s: &str) -> Result<Self, Error> {
        s.parse()
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(job) = &self.job {
            write!(f, "/job:{job}")?;
        }
        if let Some(replica) = self.replica {
            write!(f, "/replica:{replica}")?;
        }
        if let Some(task) = self.task {
            write!(f, "/task:{task}")?;
        }
        match (&self.device_type, self.id) {
            (Some(ty), Some(id)) => write!(f, "/device:{ty}:{id}"),
            (Some(ty), None) => write!(f, "/device:{ty}:*"),
            (None, Some(id)) => write!(f, "/device:*:{id}"),
            (None, None) => Ok(()),
        }
    }
}

impl fmt::Debug for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceName({:?})", self.to_string())
    }
}

impl serde::Serialize for DeviceName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DeviceName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> DeviceName {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn full_name_parts() {
        let n = parse("/job:worker/replica:0/task:3/device:GPU:1");
        assert_eq!(n.job(), Some("worker"));
        assert_eq!(n.replica(), Some(0));
        assert_eq!(n.task(), Some(3));
        assert_eq!(n.device_type(), Some("GPU"));
        assert_eq!(n.id(), Some(1));
        assert!(n.is_fully_specified());
        assert_eq!(n, DeviceName::full("worker", 0, 3, "GPU", 1).unwrap());
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(
            parse("/device:GPU:*/task:2/replica:1/job:a").to_string(),
            "/job:a/replica:1/task:2/device:GPU:*"
        );
        assert_eq!(parse("/cpu:0").to_string(), "/device:CPU:0");
        assert_eq!(parse("/device:*:3").to_string(), "/device:*:3");
        assert_eq!(parse("/").to_string(), "");
        assert_eq!(parse("/job:*/replica:*").to_string(), "");
    }

    #[test]
    fn builders_validate() {
        assert!(DeviceName::new().with_job("1x").is_err());
        assert!(DeviceName::new().with_task(1 << 31).is_err());
        assert!(DeviceName::new().with_device_type("GPU:0").is_err());
        assert_eq!(
            DeviceName::for_task("ps", 2).unwrap().to_string(),
            "/job:ps/replica:0/task:2"
        );
    }

    #[test]
    fn serde_as_string() {
        let n = parse("/job:ps/cpu:0");
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(json, "\"/job:ps/device:CPU:0\"");
        assert_eq!(serde_json::from_str::<DeviceName>(&json).unwrap(), n);
        assert!(serde_json::from_str::<DeviceName>("\"/job:\"").is_err());
    }

    #[test]
    fn debug_shows_the_name() {
        assert_eq!(format!("{:?}", parse("/job:a")), "DeviceName(\"/job:a\")");
    }
}
