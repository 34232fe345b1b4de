//! TensorFlow's visibility rule (`EagerContext::FilterDevicesForRemoteWorkers`), for one device,
//! one task, or every task of a cluster at once ([`VisibilityIndex`]).

use std::borrow::Borrow;
use std::collections::HashMap;

use crate::filters::DeviceFilter;
use crate::{ClusterDeviceFilters, DeviceName};

/// True when `device` is on task `task` of `job` as TensorFlow keys the filters:
/// `/job:J/replica:0/task:T`.
fn on_task(job: &str, task: u32, device: &DeviceName) -> bool {
    device.job() == Some(job) && device.replica == Some(0) && device.task == Some(task)
}

/// The rule for a task that has filters.
fn passes(job: &str, task: u32, filters: &[DeviceFilter], device: &DeviceName) -> bool {
    on_task(job, task, device)
        || filters
            .iter()
            .any(|f| f.device_name().is_compatible_with(device))
}

impl ClusterDeviceFilters {
    /// Whether task `task` of job `job` may see `device`, by the rule of TensorFlow's
    /// `FilterDevicesForRemoteWorkers`:
    ///
    /// 1. a task with no filters sees every device;
    /// 2. a device on the task itself (`/job:J/replica:0/task:T/…`, TensorFlow keys filters with
    ///    replica 0) is always visible;
    /// 3. otherwise a device is visible iff at least one filter is compatible with it
    ///    ([`DeviceName::is_compatible_with`]: each part unset on either side or equal).
    ///
    /// ```
    /// use device_filter::{ClusterDeviceFilters, DeviceName};
    ///
    /// let mut filters = ClusterDeviceFilters::default();
    /// filters.set_device_filters("worker", 0, ["/job:ps"])?;
    /// let dev = |s: &str| s.parse::<DeviceName>();
    /// assert!(filters.is_visible("worker", 0, &dev("/job:ps/replica:0/task:1/device:CPU:0")?));
    /// assert!(filters.is_visible("worker", 0, &dev("/job:worker/replica:0/task:0/device:CPU:0")?));
    /// assert!(!filters.is_visible("worker", 0, &dev("/job:worker/replica:0/task:1/device:CPU:0")?));
    /// assert!(filters.is_visible("worker", 1, &dev("/job:chief/replica:0/task:0/device:CPU:0")?));
    /// # Ok::<(), device_filter::Error>(())
    /// ```
    pub fn is_visible(&self, job: &str, task: u32, device: &DeviceName) -> bool {
        let filters = self.filters(job, task);
        filters.is_empty() || passes(job, task, filters, device)
    }

    /// The devices task `task` of job `job` may see ([`is_visible`](Self::is_visible)), in the
    /// order given. Accepts owned names or references (anything that borrows as a
    /// [`DeviceName`]).
    ///
    /// To compute the lists of many tasks over the same devices, build a
    /// [`VisibilityIndex`] with [`index`](Self::index) instead.
    pub fn visible_devices<I, D>(&self, job: &str, task: u32, devices: I) -> Vec<D>
    where
        I: IntoIterator<Item = D>,
        D: Borrow<DeviceName>,
    {
        let filters = self.filters(job, task);
        devices
            .into_iter()
            .filter(|d| filters.is_empty() || passes(job, task, filters, d.borrow()))
            .collect()
    }

    /// Indexes `devices` (typically every device of the cluster) by job and task, to compute
    /// many tasks' visible lists without comparing every filter with every device.
    pub fn index<'a>(&'a self, devices: &'a [DeviceName]) -> VisibilityIndex<'a> {
        VisibilityIndex::new(self, devices)
    }
}

/// The devices of a cluster indexed by job and by task, for computing each task's visible
/// devices ([`ClusterDeviceFilters::visible_devices`]) at scale.
///
/// A filter that names a job is only compared with that job's devices (and with devices that
/// name no job); a filter that names nothing but a job takes that job's devices without
/// comparing them at all. Results are in the order of the device slice.
#[derive(Debug, Clone)]
pub struct VisibilityIndex<'a> {
    filters: &'a ClusterDeviceFilters,
    devices: &'a [DeviceName],
    /// Devices that name a job, by job.
    by_job: HashMap<&'a str, Vec<usize>>,
    /// Devices that name no job: every filter's job is compatible with them.
    jobless: Vec<usize>,
    /// Devices on `/job:J/replica:0/task:T`, by `(J, T)`.
    by_task: HashMap<(&'a str, u32), Vec<usize>>,
}

impl<'a> VisibilityIndex<'a> {
    fn new(filters: &'a ClusterDeviceFilters, devices: &'a [DeviceName]) -> Self {
        let mut by_job: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut jobless = Vec::new();
        let mut by_task: HashMap<(&str, u32), Vec<usize>> = HashMap::new();
        for (i, device) in devices.iter().enumerate() {
            match device.job() {
                Some(job) => {
                    by_job.entry(job).or_default().push(i);
                    if let (Some(0), Some(task)) = (device.replica, device.task) {
                        by_task.entry((job, task)).or_default().push(i);
                    }
                }
                None => jobless.push(i),
            }
        }
        Self {
            filters,
            devices,
            by_job,
            jobless,
            by_task,
        }
    }

    /// The positions (in the indexed slice) of the devices task `task` of job `job` may see,
    /// ascending.
    pub fn visible_indices(&self, job: &str, task: u32) -> Vec<usize> {
        let filters = self.filters.filters(job, task);
        if filters.is_empty() {
            return (0..self.devices.len()).collect();
        }
        let mut seen = Bitset::new(self.devices.len());
        if let Some(own) = self.by_task.get(&(job, task)) {
            own.iter().for_each(|&i| seen.insert(i));
        }
        for filter in filters {
            self.mark_compatible(filter.device_name(), &mut seen);
        }
        seen.into_sorted()
    }

    /// The devices task `task` of job `job` may see, in the order of the indexed slice.
    pub fn visible_devices(&self, job: &str, task: u32) -> Vec<&'a DeviceName> {
        self.visible_indices(job, task)
            .into_iter()
            .map(|i| &self.devices[i])
            .collect()
    }

    /// Marks every device `filter` is compatible with.
    fn mark_compatible(&self, filter: &DeviceName, seen: &mut Bitset) {
        let Some(job) = filter.job() else {
            for (i, device) in self.devices.iter().enumerate() {
                if filter.is_compatible_with(device) {
                    seen.insert(i);
                }
            }
            return;
        };
        let only_job = filter.replica.is_none()
            && filter.task.is_none()
            && filter.device_type.is_none()
            && filter.id.is_none();
        for &i in self.by_job.get(job).map_or(&[][..], Vec::as_slice) {
            if only_job || filter.is_compatible_with(&self.devices[i]) {
                seen.insert(i);
            }
        }
        for &i in &self.jobless {
            if filter.is_compatible_with(&self.devices[i]) {
                seen.insert(i);
            }
        }
    }
}

/// A fixed-size set of device positions.
struct Bitset {
    words: Vec<u64>,
}

impl Bitset {
    fn new(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
        }
    }

    fn insert(&mut self, i: usize) {
        if let Some(word) = self.words.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    fn into_sorted(self) -> Vec<usize> {
        let count = self.words.iter().map(|w| w.count_ones() as usize).sum();
        let mut out = Vec::with_capacity(count);
        for (w, &word) in self.words.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<DeviceName> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn index_agrees_with_the_direct_rule() {
        let devices = names(&[
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:1/device:CPU:0",
            "/job:worker/replica:0/task:1/device:GPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:chief/replica:0/task:0/device:CPU:0",
            "/device:GPU:0",
            "/job:worker/replica:1/task:0/device:CPU:0",
        ]);
        let mut f = ClusterDeviceFilters::new();
        f.set_device_filters("worker", 0, ["/job:ps"]).unwrap();
        f.set_device_filters("worker", 1, ["/device:GPU:0", "/job:chief/task:0"])
            .unwrap();
        f.set_device_filters("ps", 0, ["/job:worker/task:1/device:CPU:*"])
            .unwrap();
        let index = f.index(&devices);
        for (job, task) in [
            ("worker", 0),
            ("worker", 1),
            ("ps", 0),
            ("chief", 0),
            ("x", 9),
        ] {
            let direct = f.visible_devices(job, task, &devices);
            assert_eq!(index.visible_devices(job, task), direct, "{job}:{task}");
        }
        assert_eq!(
            index.visible_indices("worker", 0),
            [0, 3, 5],
            "own task, ps, and the jobless GPU"
        );
    }

    #[test]
    fn bitset_orders_positions() {
        let mut b = Bitset::new(130);
        for i in [129, 3, 64, 3, 0] {
            b.insert(i);
        }
        b.insert(500);
        assert_eq!(b.into_sorted(), [0, 3, 64, 129]);
    }
}
