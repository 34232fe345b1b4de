//! A node's GPUs and how they are shared out among the node's tasks.

use std::fmt::{self, Write as _};

use super::Error as SlurmError;
use super::vars::CUDA_VISIBLE_DEVICES;
use crate::{Env, Error};

/// Most GPUs a node may have: 65,536, hundreds of times any machine. Bounds the
/// `CUDA_VISIBLE_DEVICES` value the resolver writes for a task from `gpus_per_node` or
/// `nvidia-smi` (ordinals `0,1,…`), so `with_gpus_per_node(u32::MAX)` is an error rather than
/// 40 GB of text.
pub const MAX_GPUS_PER_NODE: u32 = 1 << 16;

/// The GPUs of this task's node, as CUDA names them for this process: the entries of
/// `CUDA_VISIBLE_DEVICES` when it is set (Slurm's gres plugin sets it to the GPUs of the
/// allocation, which need not be `0..n`), else the ordinals `0..n`.
///
/// Nothing is allocated per GPU: the entries are read from the variable's text when a task's
/// share is asked for, so memory is the variable itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeGpus {
    /// `CUDA_VISIBLE_DEVICES`, if set; else the GPUs are the ordinals `0..count`.
    visible: Option<String>,
    count: u32,
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
    /// `CUDA_VISIBLE_DEVICES` lists, else as many as `count_gpus` says (nvidia-smi).
    ///
    /// `CUDA_VISIBLE_DEVICES=""` hides every GPU, so it is zero GPUs (TensorFlow counts it as
    /// one). A `gpus_per_node` above the number of visible devices is an error, since the tasks
    /// beyond them would be handed devices this process cannot see; one above
    /// [`MAX_GPUS_PER_NODE`] is an error too.
    pub(super) fn find(
        env: &Env,
        gpus_per_node: Option<u32>,
        count_gpus: impl FnOnce() -> Result<u32, SlurmError>,
    ) -> Result<Self, Error> {
        let limit = |count: u32, origin: &str| {
            if count > MAX_GPUS_PER_NODE {
                return Err(SlurmError::TooManyGpus {
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
                        return Err(SlurmError::GpusNotVisible {
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
                })
            }
            (None, Some(n)) => Ok(Self {
                visible: None,
                count: limit(n, "gpus_per_node")?,
            }),
            (None, None) => Ok(Self {
                visible: None,
                count: limit(count_gpus()?, "nvidia-smi --list-gpus")?,
            }),
        }
    }

    /// How many GPUs the node has.
    pub(super) fn count(&self) -> u32 {
        self.count
    }

    /// The `CUDA_VISIBLE_DEVICES` value of the node's task number `local`: its `per_task`
    /// GPUs, taken in order, `""` when it gets none. `None` if the node has too few GPUs,
    /// which [`check`] rules out.
    pub(super) fn of_task(&self, local: u32, per_task: u32) -> Option<String> {
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

/// TensorFlow's check: the busiest node must have `per_task` GPUs for each of its tasks.
pub(super) fn check(
    gpus_per_node: u32,
    max_tasks_per_node: u32,
    per_task: u32,
) -> Result<(), SlurmError> {
    if u64::from(max_tasks_per_node) * u64::from(per_task) > u64::from(gpus_per_node) {
        return Err(SlurmError::NotEnoughGpus {
            gpus_per_node,
            tasks_per_node: max_tasks_per_node,
            gpus_per_task: per_task,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_smi() -> Result<u32, SlurmError> {
        panic!("nvidia-smi must not run when the GPUs are known")
    }

    #[test]
    fn visible_devices_are_used_as_named() {
        let env = Env::from_iter([("CUDA_VISIBLE_DEVICES", "4,5, 6,7")]);
        let gpus = NodeGpus::find(&env, None, no_smi).unwrap();
        assert_eq!(gpus.count(), 4);
        assert_eq!(gpus.of_task(0, 2).as_deref(), Some("4,5"));
        assert_eq!(gpus.of_task(1, 2).as_deref(), Some("6,7"));
        assert_eq!(gpus.of_task(2, 2), None);
        assert_eq!(gpus.of_task(3, 0).as_deref(), Some(""));
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
        let e = NodeGpus::find(&env, Some(4), no_smi)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gpus_per_node 4") && e.contains("GPU-a,GPU-b,GPU-c"),
            "{e}"
        );

        let gpus =
            NodeGpus::find(&Env::from_iter::<[(&str, &str); 0]>([]), Some(3), no_smi).unwrap();
        assert_eq!(gpus.of_task(1, 1).as_deref(), Some("1"));
    }

    #[test]
    fn nvidia_smi_only_when_nothing_else_says() {
        let env = Env::from_iter::<[(&str, &str); 0]>([]);
        let gpus = NodeGpus::find(&env, None, || Ok(2)).unwrap();
        assert_eq!(gpus.of_task(0, 2).as_deref(), Some("0,1"));
    }

    #[test]
    fn no_memory_per_gpu() {
        // Issue 13: one String per ordinal made this abort on a 103 GB allocation.
        let none = Env::from_iter::<[(&str, &str); 0]>([]);
        let e = NodeGpus::find(&none, Some(u32::MAX), no_smi).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gpus_per_node gives 4294967295 GPUs per node, more than the 65536 a node may have"
        );
        let e = NodeGpus::find(&none, None, || Ok(MAX_GPUS_PER_NODE + 1)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("nvidia-smi --list-gpus gives 65537"),
            "{e}"
        );
        let gpus = NodeGpus::find(&none, Some(MAX_GPUS_PER_NODE), no_smi).unwrap();
        assert_eq!(gpus.of_task(0, 3).as_deref(), Some("0,1,2"));
        assert_eq!(gpus.of_task(21844, 3).as_deref(), Some("65532,65533,65534"));
        assert_eq!(gpus.of_task(21845, 3), None);
    }

    #[test]
    fn check_uses_tensorflow_wording() {
        assert!(check(8, 4, 2).is_ok());
        assert!(check(0, 4, 0).is_ok());
        let e = check(4, 3, 2).unwrap_err().to_string();
        assert!(
            e.starts_with("Requested more GPUs per node than available."),
            "{e}"
        );
    }
}
