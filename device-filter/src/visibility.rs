//! TensorFlow's visibility rule (`EagerContext::FilterDevicesForRemoteWorkers`), for one device,
//! one task, or every task of a cluster at once ([`VisibilityIndex`]).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;

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
#[derive(Clone)]
pub struct VisibilityIndex<'a> {
    filters: &'a ClusterDeviceFilters,
    devices: &'a [DeviceName],
    /// Devices that name a job, by job.
    by_job: HashMap<&'a str, Vec<usize>>,
    /// Devices that name no job: every filter's job is compatible with them.
    jobless: Vec<usize>,
    /// Devices on `/job:J/replica:0/task:T`, by `(J, T)`.
    by_task: HashMap<(&'a str, u32), Vec<usize>>,
    /// For each job named by a filter that sets nothing else (`/job:ps`): every device such a
    /// filter is compatible with (the job's devices and the jobless ones).
    whole_jobs: HashMap<&'a str, Bitset>,
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
        let mut whole_jobs = HashMap::new();
        for (_, _, task_filters) in filters.iter() {
            for filter in task_filters {
                let Some(job) = job_only(filter.device_name()) else {
                    continue;
                };
                whole_jobs.entry(job).or_insert_with(|| {
                    let mut set = Bitset::new(devices.len());
                    let own = by_job.get(job).map_or(&[][..], Vec::as_slice);
                    own.iter().chain(&jobless).for_each(|&i| set.insert(i));
                    set
                });
            }
        }
        Self {
            filters,
            devices,
            by_job,
            jobless,
            by_task,
            whole_jobs,
        }
    }

    /// The positions (in the indexed slice) of the devices task `task` of job `job` may see,
    /// ascending.
    pub fn visible_indices(&self, job: &str, task: u32) -> Vec<usize> {
        match self.visible_set(job, task) {
            Some(set) => set.iter().collect(),
            None => (0..self.devices.len()).collect(),
        }
    }

    /// The devices task `task` of job `job` may see, in the order of the indexed slice.
    pub fn visible_devices(&self, job: &str, task: u32) -> Vec<&'a DeviceName> {
        match self.visible_set(job, task) {
            Some(set) => set.iter().map(|i| &self.devices[i]).collect(),
            None => self.devices.iter().collect(),
        }
    }

    /// The visible positions of a task with filters; `None` when it has none (sees all).
    fn visible_set(&self, job: &str, task: u32) -> Option<Bitset> {
        let filters = self.filters.filters(job, task);
        if filters.is_empty() {
            return None;
        }
        let mut seen = Bitset::new(self.devices.len());
        if let Some(own) = self.by_task.get(&(job, task)) {
            own.iter().for_each(|&i| seen.insert(i));
        }
        for filter in filters {
            self.mark_compatible(filter.device_name(), &mut seen);
        }
        Some(seen)
    }

    /// Marks every device `filter` is compatible with.
    fn mark_compatible(&self, filter: &DeviceName, seen: &mut Bitset) {
        if let Some(set) = job_only(filter).and_then(|job| self.whole_jobs.get(job)) {
            seen.union_with(set);
            return;
        }
        let Some(job) = filter.job() else {
            for (i, device) in self.devices.iter().enumerate() {
                if filter.is_compatible_with(device) {
                    seen.insert(i);
                }
            }
            return;
        };
        let candidates = self.by_job.get(job).map_or(&[][..], Vec::as_slice);
        for &i in candidates.iter().chain(&self.jobless) {
            if filter.is_compatible_with(&self.devices[i]) {
                seen.insert(i);
            }
        }
    }
}

impl fmt::Debug for VisibilityIndex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VisibilityIndex")
            .field("devices", &self.devices.len())
            .field("jobs", &self.by_job.len())
            .field("tasks", &self.by_task.len())
            .field("jobless_devices", &self.jobless.len())
            .finish_non_exhaustive()
    }
}

/// The job of a filter that sets nothing but a job (`/job:ps`).
fn job_only(filter: &DeviceName) -> Option<&str> {
    let only_job = filter.replica.is_none()
        && filter.task.is_none()
        && filter.device_type.is_none()
        && filter.id.is_none();
    filter.job().filter(|_| only_job)
}

/// A fixed-size set of device positions.
#[derive(Debug, Clone)]
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

    fn union_with(&mut self, other: &Bitset) {
        for (word, &more) in self.words.iter_mut().zip(&other.words) {
            *word |= more;
        }
    }

    /// The positions in the set, ascending.
    fn iter(&self) -> Ones<'_> {
        Ones {
            len: self.words.iter().map(|w| w.count_ones() as usize).sum(),
            words: &self.words,
            next_word: 0,
            bits: 0,
        }
    }
}

/// The positions in a [`Bitset`], ascending; its length is known, so collecting allocates once.
struct Ones<'s> {
    len: usize,
    words: &'s [u64],
    /// The word after the one `bits` came from.
    next_word: usize,
    /// The bits of the current word not yet returned.
    bits: u64,
}

impl Iterator for Ones<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.bits = *self.words.get(self.next_word)?;
            self.next_word += 1;
        }
        let i = (self.next_word - 1) * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        self.len = self.len.saturating_sub(1);
        Some(i)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl ExactSizeIterator for Ones<'_> {}

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
            format!("{index:?}"),
            "VisibilityIndex { devices: 7, jobs: 3, tasks: 4, jobless_devices: 1, .. }"
        );
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
        assert_eq!(b.iter().len(), 4);
        assert_eq!(b.iter().collect::<Vec<_>>(), [0, 3, 64, 129]);
    }
}
