//! A node's GPUs and how they are shared out among the node's tasks.

use super::vars::CUDA_VISIBLE_DEVICES;
use crate::{Env, Error};

/// The GPUs of this task's node, as CUDA names them for this process: the entries of
/// `CUDA_VISIBLE_DEVICES` when it is set (Slurm's gres plugin sets it to the GPUs of the
/// allocation, which need not be `0..n`), else the ordinals `0..n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeGpus {
    ids: Vec<String>,
}

impl NodeGpus {
    /// The node's GPUs: `gpus_per_node` of them when given, else as many as
    /// `CUDA_VISIBLE_DEVICES` lists, else as many as `count_gpus` says (nvidia-smi).
    ///
    /// `CUDA_VISIBLE_DEVICES=""` hides every GPU, so it is zero GPUs (TensorFlow counts it as
    /// one). A `gpus_per_node` above the number of visible devices is an error, since the tasks
    /// beyond them would be handed devices this process cannot see.
    pub(super) fn find(
        env: &Env,
        gpus_per_node: Option<u32>,
        count_gpus: impl FnOnce() -> Result<u32, Error>,
    ) -> Result<Self, Error> {
        let ids = match (env.get(CUDA_VISIBLE_DEVICES), gpus_per_node) {
            (Some(visible), requested) => {
                let mut ids: Vec<String> = visible
                    .split(',')
                    .map(str::trim)
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned)
                    .collect();
                if let Some(n) = requested {
                    if n as usize > ids.len() {
                        return Err(Error::SlurmGpusNotVisible {
                            gpus_per_node: n,
                            visible,
                            count: ids.len(),
                        });
                    }
                    ids.truncate(n as usize);
                }
                ids
            }
            (None, Some(n)) => ordinals(n),
            (None, None) => ordinals(count_gpus()?),
        };
        Ok(Self { ids })
    }

    /// How many GPUs the node has.
    pub(super) fn count(&self) -> u32 {
        // At most u32::MAX entries can be asked for or counted; a longer CUDA_VISIBLE_DEVICES
        // would need gigabytes of text.
        u32::try_from(self.ids.len()).unwrap_or(u32::MAX)
    }

    /// The `CUDA_VISIBLE_DEVICES` value of the node's task number `local`: its `per_task`
    /// GPUs, taken in order, `""` when it gets none. `None` if the node has too few GPUs,
    /// which [`check`] rules out.
    pub(super) fn of_task(&self, local: u32, per_task: u32) -> Option<String> {
        let start = (local as usize).checked_mul(per_task as usize)?;
        let end = start.checked_add(per_task as usize)?;
        self.ids.get(start..end).map(|ids| ids.join(","))
    }
}

/// `0..n` as text.
fn ordinals(n: u32) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

/// TensorFlow's check: the busiest node must have `per_task` GPUs for each of its tasks.
pub(super) fn check(
    gpus_per_node: u32,
    max_tasks_per_node: u32,
    per_task: u32,
) -> Result<(), Error> {
    if u64::from(max_tasks_per_node) * u64::from(per_task) > u64::from(gpus_per_node) {
        return Err(Error::SlurmNotEnoughGpus {
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

    fn no_smi() -> Result<u32, Error> {
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
