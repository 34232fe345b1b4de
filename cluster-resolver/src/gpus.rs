//! A node's GPUs: finding them (one discovery for the whole workspace), showing them as
//! TensorFlow does, and sharing them out among the node's tasks as each task's
//! `CUDA_VISIBLE_DEVICES`.
//!
//! Whoever starts several TensorFlow processes on one host must give each its own GPUs, or
//! they all grab every GPU. This module is that decision, made one way for every launcher
//! here: the [Slurm resolver](crate::SlurmClusterResolver) uses it for the task it runs in,
//! and `elastic`'s agent (`tfcluster run --rdzv --tasks-per-node N`) for each task it starts.
//! `remote-connect`'s task server lists the same GPUs as its devices.
//!
//! - **Where GPUs are read from** ([`GpuSource`]): [`host`], this process's host, asks NVML
//!   (`libnvidia-ml.so.1`, through the `nvml-wrapper` crate, loaded at run time: a host
//!   without the library has no GPUs, and nothing is linked at build time), and only where
//!   NVML cannot be loaded runs `nvidia-smi` from `PATH` ([`NvidiaSmi`], killed at its
//!   deadline); each answer is kept for the process. [`NvidiaSmi`] alone, or a
//!   [`FixedGpus`] list (a fake driver for tests), can stand in for it. A source's methods
//!   block; async code asks through [`count`] and [`gpus`], which run the question on a thread
//!   of their own under the source's deadline, on any executor, so a hung driver never blocks
//!   a runtime worker.
//! - **What TensorFlow shows** ([`visible`]): the GPUs `CUDA_VISIBLE_DEVICES` lets the process
//!   use (by index or `GPU-…` UUID prefix, in its order, ending at the first entry that names
//!   none, as the CUDA driver reads it), renumbered `GPU:0..n`, with TensorFlow's
//!   `memory_limit` (free memory less [`min_system_memory`]) and `physical_device_desc`.
//!   It is a pure function of the driver's answer, so it is tested without a GPU.
//! - **Which GPUs the node has** ([`NodeGpus::find`]): the entries of `CUDA_VISIBLE_DEVICES`
//!   when it is set, kept as written (ordinals, `GPU-…` UUIDs or `MIG-…` ids), `""` being no
//!   GPU; else as many as the source counts (NVML's device count, or the `GPU` lines of
//!   `nvidia-smi --list-gpus`), as the ordinals `0..n`; no driver at all is no GPU.
//! - **How many each task gets** ([`NodeGpus::per_task`]): as many as asked, if the node has
//!   that many for each of its tasks, else TensorFlow's `Requested more GPUs per node than
//!   available.`; by default the node's GPUs divided by its tasks, rounded down (TensorFlow's
//!   rule: with fewer GPUs than tasks, that is none each).
//! - **Which ones** ([`NodeGpus::of_task`]): the node's `k`-th task gets GPUs
//!   `k × per_task .. (k + 1) × per_task` of the node's list, in order.
//!
//! ```
//! use cluster_resolver::Env;
//! use cluster_resolver::gpus::{self, GpuSource, NodeGpus};
//!
//! // A host whose allocation is four GPUs, named by UUID, running two tasks.
//! let env = Env::from_iter([("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c,GPU-d")]);
//! // The host's driver is asked only when the variable is unset.
//! let gpus = NodeGpus::find(&env, None, || gpus::host().count())?;
//! assert_eq!(gpus.count(), 4);
//! let per_task = gpus.per_task(2, None)?;
//! assert_eq!(per_task, 2);
//! assert_eq!(gpus.of_task(1, per_task).as_deref(), Some("GPU-c,GPU-d"));
//! // Three each for two tasks is more than the host has.
//! assert!(gpus.per_task(2, Some(3)).is_err());
//! # Ok::<(), cluster_resolver::Error>(())
//! ```
//!
//! # Differences from TensorFlow
//!
//! - **Which GPUs.** TensorFlow's Slurm resolver gives a task the ordinals `0..n` whatever
//!   the node's `CUDA_VISIBLE_DEVICES` was, so on a node whose allocation is GPUs 4..7 its
//!   tasks use GPUs of another job (the bug of jax#23452); here a task gets its share **of
//!   the visible list**. `CUDA_VISIBLE_DEVICES=""` is zero GPUs (TensorFlow counts one).
//! - **No GPU is a CPU-only node**, not `range() arg 3 must not be zero` (tensorflow#56894),
//!   and a missing driver or `nvidia-smi` is no GPU, not `FileNotFoundError`.
//! - **NVML in-process, not `nvidia-smi`.** TensorFlow's Slurm resolver runs
//!   `nvidia-smi --list-gpus`; here NVML's device count is the same number (physical GPUs,
//!   MIG instances not counted) without starting a process; `nvidia-smi` is the fallback.
//! - **A deadline** ([`DEFAULT_NVIDIA_SMI_TIMEOUT`], plus a short grace); TensorFlow waits for
//!   `nvidia-smi` forever.
//! - **Order.** [`visible`] numbers GPUs in the driver's (NVML's, PCI bus) order, which is
//!   CUDA's with `CUDA_DEVICE_ORDER=PCI_BUS_ID`; CUDA's default order (fastest first) differs
//!   only on hosts that mix GPU models.
//! - **`memory_limit` is about 0.5 GiB higher.** TensorFlow reads free memory with
//!   `cuMemGetInfo` after creating its CUDA context, which itself takes memory; here it is
//!   read from the driver (NVML) with no context, and no context is created (that takes
//!   seconds). Seen on an H100 80GB HBM3 (driver 580): NVML 81,079 MiB free, so
//!   `memory_limit` 79,543 MiB; with a CUDA context open (PyTorch's), 80,552 MiB free, so
//!   TensorFlow's rule gives about 79,016 MiB. NVML's start there took about 23 ms.
//! - **Bounded memory.** A node of more than [`MAX_GPUS_PER_NODE`] GPUs is an error, and
//!   nothing is allocated per GPU (TensorFlow builds a string per ordinal, and `2**32` of
//!   them exhaust memory).

mod gpu;
mod nvidia_smi;
mod nvml;
mod off_thread;
mod source;
mod tensorflow;

use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

use cluster_spec::__private::quote::quote;

pub use crate::error::gpus::{Error, NvmlError};
pub use gpu::Gpu;
pub use nvidia_smi::{DEFAULT_TIMEOUT as DEFAULT_NVIDIA_SMI_TIMEOUT, NvidiaSmi, QUERY};
pub use source::{Count, FixedGpus, GpuSource, HostGpus, host};
pub use tensorflow::{VisibleGpu, min_system_memory, visible};

/// How much longer than a source's own [`timeout`](GpuSource::timeout) [`count`] and [`gpus`]
/// wait, so that a source that enforces its deadline itself (`nvidia-smi`, killed at it) says
/// so in its own words first.
const GRACE: Duration = Duration::from_millis(500);

/// How many GPUs `source` counts, asked on a thread of its own so no async worker ever
/// blocks on a driver, under the source's deadline (plus a short grace); a cached answer
/// comes back at once. Works on any executor.
///
/// # Errors
///
/// The source's error, or [`Error::Timeout`] when it did not answer in time.
pub async fn count(source: Arc<dyn GpuSource>) -> Result<Count, Error> {
    if let Some(count) = source.known_count() {
        return Ok(count);
    }
    let (name, timeout) = (source.name(), source.timeout() + GRACE);
    off_thread::run(&name, timeout, move || source.count()).await
}

/// Every GPU `source` reports, asked as [`count`] asks.
///
/// # Errors
///
/// The source's error, or [`Error::Timeout`] when it did not answer in time.
pub async fn gpus(source: Arc<dyn GpuSource>) -> Result<Vec<Gpu>, Error> {
    if let Some(gpus) = source.known_gpus() {
        return Ok(gpus);
    }
    let (name, timeout) = (source.name(), source.timeout() + GRACE);
    off_thread::run(&name, timeout, move || source.gpus()).await
}

use crate::Env;

/// The variable naming the GPUs a process may use, as CUDA ordinals, UUIDs or MIG ids.
pub const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// Most GPUs a node may have: 65,536, hundreds of times any machine. Bounds the
/// `CUDA_VISIBLE_DEVICES` value written for a task from `gpus_per_node` or `nvidia-smi`
/// (ordinals `0,1,…`), so `with_gpus_per_node(u32::MAX)` is an error rather than 40 GB of
/// text.
pub const MAX_GPUS_PER_NODE: u32 = 1 << 16;

/// The GPUs of a node, as CUDA names them for this process: the entries of
/// `CUDA_VISIBLE_DEVICES` when it is set (Slurm's gres plugin sets it to the GPUs of the
/// allocation, which need not be `0..n`), else the ordinals `0..n`.
///
/// Nothing is allocated per GPU: the entries are read from the variable's text when a task's
/// share is asked for, so memory is the variable itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGpus {
    /// `CUDA_VISIBLE_DEVICES`, if set; else the GPUs are the ordinals `0..count`.
    visible: Option<String>,
    count: u32,
    /// Whether `gpus_per_node` gave the count.
    given: bool,
    /// Who counted the GPUs when neither the variable nor `gpus_per_node` said.
    counted_by: &'static str,
}

/// The entries of a `CUDA_VISIBLE_DEVICES` value.
fn entries(visible: &str) -> impl Iterator<Item = &str> {
    visible
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

impl NodeGpus {
    /// The node's GPUs: `gpus_per_node` of them when given, else as many as
    /// `CUDA_VISIBLE_DEVICES` (read from `env`) lists, else as many as `count_gpus` says
    /// (usually a [`GpuSource`]'s [`count`](GpuSource::count), or one [`count`] gave), which
    /// runs only then ([`needs_count`](Self::needs_count) tells beforehand).
    ///
    /// `CUDA_VISIBLE_DEVICES=""` hides every GPU, so it is zero GPUs (TensorFlow counts it as
    /// one). A `gpus_per_node` above the number of visible devices is
    /// [`Error::GpusNotVisible`], since the tasks beyond them would be handed devices this
    /// process cannot see; one above [`MAX_GPUS_PER_NODE`], or an `nvidia-smi` count above
    /// it, is [`Error::TooManyGpus`]. A `CUDA_VISIBLE_DEVICES` that is not UTF-8 is the
    /// crate's [`NotUnicode`](crate::Error::NotUnicode).
    pub fn find(
        env: &Env,
        gpus_per_node: Option<u32>,
        count_gpus: impl FnOnce() -> Result<Count, Error>,
    ) -> Result<Self, crate::Error> {
        let limit = |count: u32, origin: &str| {
            if count > MAX_GPUS_PER_NODE {
                return Err(Error::TooManyGpus {
                    count,
                    origin: origin.to_owned(),
                    max: MAX_GPUS_PER_NODE,
                });
            }
            Ok(count)
        };
        match (env.get(CUDA_VISIBLE_DEVICES)?, gpus_per_node) {
            (Some(visible), requested) => {
                let listed = entries(&visible).count();
                // At most u32::MAX entries can be asked for or counted; a longer list would
                // need gigabytes of text.
                let listed = u32::try_from(listed).unwrap_or(u32::MAX);
                let count = match requested {
                    Some(n) if n > listed => {
                        return Err(Error::GpusNotVisible {
                            gpus_per_node: n,
                            visible,
                            count: listed as usize,
                        }
                        .into());
                    }
                    Some(n) => n,
                    None => listed,
                };
                Ok(Self {
                    visible: Some(visible),
                    count,
                    given: requested.is_some(),
                    counted_by: "",
                })
            }
            (None, Some(n)) => Ok(Self {
                visible: None,
                count: limit(n, "gpus_per_node")?,
                given: true,
                counted_by: "",
            }),
            (None, None) => {
                let counted = count_gpus()?;
                Ok(Self {
                    visible: None,
                    count: limit(counted.gpus, counted.origin)?,
                    given: false,
                    counted_by: counted.origin,
                })
            }
        }
    }

    /// Whether [`find`](Self::find) would ask its `count_gpus`: neither `gpus_per_node` nor
    /// `CUDA_VISIBLE_DEVICES` (read from `env`) says how many GPUs the node has. Async code
    /// counts beforehand with [`count`] and hands `find` the answer.
    pub fn needs_count(env: &Env, gpus_per_node: Option<u32>) -> Result<bool, crate::Error> {
        Ok(gpus_per_node.is_none() && env.get(CUDA_VISIBLE_DEVICES)?.is_none())
    }

    /// How many GPUs the node has.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Where [`count`](Self::count) came from, for a message: `CUDA_VISIBLE_DEVICES="0,1"`
    /// (its value quoted, shortened when long), `gpus_per_node`, or who counted them
    /// (`NVML`, `nvidia-smi --list-gpus`).
    pub fn source(&self) -> String {
        match (&self.visible, self.given) {
            (Some(visible), false) => format!("{CUDA_VISIBLE_DEVICES}={}", quote(visible, 0)),
            (Some(visible), true) => format!(
                "gpus_per_node (the first {} of {CUDA_VISIBLE_DEVICES}={})",
                self.count,
                quote(visible, 0)
            ),
            (None, true) => "gpus_per_node".to_owned(),
            (None, false) => format!("{} ({CUDA_VISIBLE_DEVICES} is unset)", self.counted_by),
        }
    }

    /// How many GPUs each of the node's `tasks_per_node` tasks gets: `requested` if the node
    /// has that many for each task, else [`Error::NotEnoughGpus`] (TensorFlow's check and
    /// wording); by default the node's GPUs divided by its tasks, rounded down (TensorFlow's
    /// default: none each when the node has fewer GPUs than tasks, or no task).
    ///
    /// For a Slurm step `tasks_per_node` is the most tasks any node of the step has, as
    /// TensorFlow counts it, so every task of the step gets as many.
    pub fn per_task(&self, tasks_per_node: u32, requested: Option<u32>) -> Result<u32, Error> {
        let per_task =
            requested.unwrap_or_else(|| self.count.checked_div(tasks_per_node).unwrap_or(0));
        if u64::from(tasks_per_node) * u64::from(per_task) > u64::from(self.count) {
            return Err(Error::NotEnoughGpus {
                gpus_per_node: self.count,
                tasks_per_node,
                gpus_per_task: per_task,
            });
        }
        Ok(per_task)
    }

    /// The `CUDA_VISIBLE_DEVICES` value of the node's task number `local`: its `per_task`
    /// GPUs, taken in order (the node's own names for them, comma separated), `""` when it
    /// gets none. `None` if the node has too few GPUs, which [`per_task`](Self::per_task)
    /// rules out for every task of the node.
    pub fn of_task(&self, local: u32, per_task: u32) -> Option<String> {
        let start = u64::from(local) * u64::from(per_task);
        let end = start + u64::from(per_task);
        if end > u64::from(self.count) {
            return None;
        }
        // Both fit: `end` is at most `count`, a u32.
        let (start, end) = (start as u32, end as u32);
        Some(match &self.visible {
            Some(visible) => join(
                entries(visible)
                    .skip(start as usize)
                    .take(per_task as usize),
            ),
            None => join(start..end),
        })
    }
}

/// `ids` written comma separated, straight into one string.
fn join<T: fmt::Display>(ids: impl Iterator<Item = T>) -> String {
    let mut out = String::new();
    for (k, id) in ids.enumerate() {
        if k > 0 {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{id}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_smi() -> Result<Count, Error> {
        panic!("nvidia-smi must not run when the GPUs are known")
    }

    fn unset() -> Env {
        Env::from_iter::<[(&str, &str); 0]>([])
    }

    #[test]
    fn visible_devices_are_used_as_named() {
        let env = Env::from_iter([("CUDA_VISIBLE_DEVICES", "4,5, 6,7")]);
        let gpus = NodeGpus::find(&env, None, no_smi).unwrap();
        assert_eq!(gpus.count(), 4);
        assert_eq!(gpus.source(), r#"CUDA_VISIBLE_DEVICES="4,5, 6,7""#);
        assert_eq!(gpus.of_task(0, 2).as_deref(), Some("4,5"));
        assert_eq!(gpus.of_task(1, 2).as_deref(), Some("6,7"));
        assert_eq!(gpus.of_task(2, 2), None);
        assert_eq!(gpus.of_task(3, 0).as_deref(), Some(""));
    }

    #[test]
    fn uuids_and_mig_ids_are_kept_verbatim() {
        let env = Env::from_iter([(
            "CUDA_VISIBLE_DEVICES",
            "GPU-8f1c2d3e-aaaa,MIG-1b2c3d4e-bbbb,MIG-GPU-0/1/0",
        )]);
        let gpus = NodeGpus::find(&env, None, no_smi).unwrap();
        assert_eq!(gpus.per_task(3, None).unwrap(), 1);
        assert_eq!(gpus.of_task(1, 1).as_deref(), Some("MIG-1b2c3d4e-bbbb"));
        assert_eq!(gpus.of_task(2, 1).as_deref(), Some("MIG-GPU-0/1/0"));
    }

    #[test]
    fn empty_visible_devices_is_no_gpu() {
        let env = Env::from_iter([("CUDA_VISIBLE_DEVICES", "")]);
        assert_eq!(NodeGpus::find(&env, None, no_smi).unwrap().count(), 0);
    }

    #[test]
    fn gpus_per_node_takes_the_first_visible_ones_or_ordinals() {
        let env = Env::from_iter([("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c")]);
        let gpus = NodeGpus::find(&env, Some(2), no_smi).unwrap();
        assert_eq!(gpus.of_task(0, 2).as_deref(), Some("GPU-a,GPU-b"));
        assert_eq!(
            gpus.source(),
            r#"gpus_per_node (the first 2 of CUDA_VISIBLE_DEVICES="GPU-a,GPU-b,GPU-c")"#
        );
        let e = NodeGpus::find(&env, Some(4), no_smi)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gpus_per_node 4") && e.contains("GPU-a,GPU-b,GPU-c"),
            "{e}"
        );

        let gpus = NodeGpus::find(&unset(), Some(3), no_smi).unwrap();
        assert_eq!(gpus.of_task(1, 1).as_deref(), Some("1"));
        assert_eq!(gpus.source(), "gpus_per_node");
    }

    #[test]
    fn nvidia_smi_only_when_nothing_else_says() {
        let gpus = NodeGpus::find(&unset(), None, || Ok(Count::nvidia_smi(2))).unwrap();
        assert_eq!(gpus.of_task(0, 2).as_deref(), Some("0,1"));
        assert_eq!(
            gpus.source(),
            "nvidia-smi --list-gpus (CUDA_VISIBLE_DEVICES is unset)"
        );
        let e = NodeGpus::find(&unset(), None, || {
            Err(Error::NvidiaSmiFailed {
                status: "exit status: 9".into(),
                output: "NVIDIA-SMI has failed".into(),
            })
        })
        .unwrap_err();
        assert!(
            matches!(e, crate::Error::Gpus(Error::NvidiaSmiFailed { .. })),
            "{e}"
        );
    }

    #[test]
    fn no_memory_per_gpu() {
        // Issue 13: one String per ordinal made this abort on a 103 GB allocation.
        let e = NodeGpus::find(&unset(), Some(u32::MAX), no_smi).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gpus_per_node gives 4294967295 GPUs per node, more than the 65536 a node may have"
        );
        let e = NodeGpus::find(&unset(), None, || {
            Ok(Count::nvidia_smi(MAX_GPUS_PER_NODE + 1))
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("nvidia-smi --list-gpus gives 65537"),
            "{e}"
        );
        let gpus = NodeGpus::find(&unset(), Some(MAX_GPUS_PER_NODE), no_smi).unwrap();
        assert_eq!(gpus.of_task(0, 3).as_deref(), Some("0,1,2"));
        assert_eq!(gpus.of_task(21844, 3).as_deref(), Some("65532,65533,65534"));
        assert_eq!(gpus.of_task(21845, 3), None);
    }

    fn ordinals(count: u32) -> NodeGpus {
        NodeGpus::find(&unset(), Some(count), no_smi).unwrap()
    }

    #[test]
    fn per_task_divides_evenly_by_default() {
        assert_eq!(ordinals(8).per_task(4, None).unwrap(), 2);
        assert_eq!(ordinals(5).per_task(2, None).unwrap(), 2);
        // Fewer GPUs than tasks: none each, as TensorFlow; no task at all: none.
        assert_eq!(ordinals(3).per_task(4, None).unwrap(), 0);
        assert_eq!(ordinals(3).per_task(0, None).unwrap(), 0);
        assert_eq!(ordinals(0).per_task(4, None).unwrap(), 0);
    }

    #[test]
    fn per_task_as_asked_when_there_are_enough() {
        assert_eq!(ordinals(8).per_task(4, Some(2)).unwrap(), 2);
        assert_eq!(ordinals(8).per_task(4, Some(1)).unwrap(), 1);
        assert_eq!(ordinals(0).per_task(4, Some(0)).unwrap(), 0);
        assert_eq!(ordinals(0).per_task(0, Some(u32::MAX)).unwrap(), u32::MAX);
        // u32::MAX tasks × u32::MAX GPUs does not overflow.
        assert!(ordinals(8).per_task(u32::MAX, Some(u32::MAX)).is_err());
    }

    #[test]
    fn too_few_gpus_uses_tensorflow_wording_and_names_the_numbers() {
        let e = ordinals(4).per_task(3, Some(2)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Requested more GPUs per node than available. \
             (3 tasks on a node × 2 GPUs per task > 4 GPUs per node)"
        );
        assert!(matches!(
            ordinals(0).per_task(1, Some(1)),
            Err(Error::NotEnoughGpus {
                gpus_per_node: 0,
                tasks_per_node: 1,
                gpus_per_task: 1
            })
        ));
    }

    #[test]
    fn every_task_gets_its_own_gpus() {
        // Whatever the node's GPUs and tasks, the tasks' shares are disjoint, in order, and
        // together the first `tasks × per_task` GPUs.
        for count in 0..10 {
            for tasks in 1..6 {
                let gpus = ordinals(count);
                let per_task = gpus.per_task(tasks, None).unwrap();
                let all: Vec<String> = (0..tasks)
                    .map(|k| gpus.of_task(k, per_task).unwrap())
                    .filter(|share| !share.is_empty())
                    .collect();
                let expected = join(0..tasks * per_task);
                assert_eq!(all.join(","), expected, "{count} GPUs, {tasks} tasks");
            }
        }
    }
}
