//! [`TaskGpus`]: the host's GPUs shared out among the agent's local tasks, as each task's
//! `CUDA_VISIBLE_DEVICES`.

use cluster_resolver::Env;
use cluster_resolver::gpus::{self, NodeGpus, NvidiaSmi};

use super::AgentError;

/// Which of the host's GPUs each local task gets, as its `CUDA_VISIBLE_DEVICES`; see
/// [`TaskGpus::find`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskGpus(Share);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Share {
    /// No GPU found and no count asked for: each task's `CUDA_VISIBLE_DEVICES` is left as
    /// the agent's.
    Inherit,
    /// Zero GPUs per task asked for: each task's `CUDA_VISIBLE_DEVICES` is `""`.
    Hide,
    /// Each task gets `per_task` of the host's GPUs.
    Each { gpus: NodeGpus, per_task: u32 },
}

impl TaskGpus {
    /// Every task's `CUDA_VISIBLE_DEVICES` left as the agent's.
    pub fn inherit() -> Self {
        Self(Share::Inherit)
    }

    /// The split of this host's GPUs among its `tasks_per_node` local tasks, found the way
    /// [`cluster_resolver::gpus`] finds a node's GPUs (as the Slurm resolver does): the
    /// entries of `CUDA_VISIBLE_DEVICES` in `env` as named (ordinals, UUIDs or MIG ids;
    /// `""` is no GPU), else as many as `nvidia_smi` lists (none when it is not installed).
    ///
    /// - `gpus_per_task` given: local task `i` gets the host's GPUs `i × K .. (i + 1) × K`;
    ///   fewer than `tasks_per_node × K` GPUs is [`AgentError::ShareGpus`], naming the
    ///   numbers and where the host's GPUs came from. `Some(0)` hides every GPU from every
    ///   task (`CUDA_VISIBLE_DEVICES=""`) and looks for none.
    /// - Not given: the host's GPUs divided evenly, `G / N` each, rounded down (a GPU left
    ///   over stays unused). With fewer GPUs than tasks that is none each, as TensorFlow's
    ///   Slurm resolver decides, and every task gets `""` (a warning says so). A host
    ///   without GPUs leaves each task's `CUDA_VISIBLE_DEVICES` as the agent's.
    ///
    /// Blocks while `nvidia-smi` runs (at most its deadline); [`Agent`](super::Agent) calls
    /// it off the async threads, once.
    pub fn find(
        env: &Env,
        tasks_per_node: u32,
        gpus_per_task: Option<u32>,
        nvidia_smi: &NvidiaSmi,
    ) -> Result<Self, AgentError> {
        Self::find_with(env, tasks_per_node, gpus_per_task, || {
            nvidia_smi.count_gpus()
        })
    }

    fn find_with(
        env: &Env,
        tasks_per_node: u32,
        gpus_per_task: Option<u32>,
        count_gpus: impl FnOnce() -> Result<u32, gpus::Error>,
    ) -> Result<Self, AgentError> {
        if gpus_per_task == Some(0) {
            return Ok(Self(Share::Hide));
        }
        let gpus = NodeGpus::find(env, None, count_gpus).map_err(AgentError::FindGpus)?;
        if gpus.count() == 0 && gpus_per_task.is_none() {
            return Ok(Self(Share::Inherit));
        }
        let per_task = gpus
            .per_task(tasks_per_node, gpus_per_task)
            .map_err(|source| AgentError::ShareGpus {
                source,
                origin: gpus.source(),
            })?;
        if per_task == 0 {
            tracing::warn!(
                gpus = gpus.count(),
                tasks_per_node,
                from = %gpus.source(),
                "fewer GPUs than local tasks: every task gets none (CUDA_VISIBLE_DEVICES=\"\"); \
                 give a GPU count per task to share them otherwise"
            );
        } else {
            tracing::info!(
                gpus = gpus.count(),
                per_task,
                tasks_per_node,
                from = %gpus.source(),
                "sharing this host's GPUs among its local tasks"
            );
        }
        Ok(Self(Share::Each { gpus, per_task }))
    }

    /// How many GPUs each local task gets; `None` when their `CUDA_VISIBLE_DEVICES` is left
    /// as the agent's.
    pub fn per_task(&self) -> Option<u32> {
        match &self.0 {
            Share::Inherit => None,
            Share::Hide => Some(0),
            Share::Each { per_task, .. } => Some(*per_task),
        }
    }

    /// The `CUDA_VISIBLE_DEVICES` of local task `local`: its GPUs, comma separated, `""`
    /// for none; `None` to leave it as the agent's.
    pub fn of_task(&self, local: u32) -> Option<String> {
        match &self.0 {
            Share::Inherit => None,
            Share::Hide => Some(String::new()),
            // A task past the split (none is: the node has `tasks_per_node`) gets no GPU
            // rather than all of them.
            Share::Each { gpus, per_task } => {
                Some(gpus.of_task(local, *per_task).unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visible(value: &str) -> Env {
        Env::from_iter([("CUDA_VISIBLE_DEVICES", value)])
    }

    fn unset() -> Env {
        Env::from_iter::<[(&str, &str); 0]>([])
    }

    fn no_smi() -> Result<u32, gpus::Error> {
        panic!("nvidia-smi must not run here")
    }

    fn shares(gpus: &TaskGpus, tasks: u32) -> Vec<Option<String>> {
        (0..tasks).map(|k| gpus.of_task(k)).collect()
    }

    fn some(shares: &[&str]) -> Vec<Option<String>> {
        shares.iter().map(|s| Some((*s).to_owned())).collect()
    }

    #[test]
    fn visible_gpus_are_split_evenly_as_named() {
        let gpus = TaskGpus::find_with(&visible("0,1,2,3"), 2, None, no_smi).unwrap();
        assert_eq!(gpus.per_task(), Some(2));
        assert_eq!(shares(&gpus, 2), some(&["0,1", "2,3"]));

        let uuids = "GPU-a,GPU-b,MIG-c,MIG-d,GPU-e";
        let gpus = TaskGpus::find_with(&visible(uuids), 2, None, no_smi).unwrap();
        assert_eq!(shares(&gpus, 2), some(&["GPU-a,GPU-b", "MIG-c,MIG-d"]));
    }

    #[test]
    fn gpus_per_task_takes_consecutive_shares() {
        let gpus = TaskGpus::find_with(&visible("4,5,6,7,8"), 2, Some(1), no_smi).unwrap();
        assert_eq!(shares(&gpus, 2), some(&["4", "5"]));
        let gpus = TaskGpus::find_with(&visible("4,5,6,7"), 2, Some(2), no_smi).unwrap();
        assert_eq!(shares(&gpus, 2), some(&["4,5", "6,7"]));
    }

    #[test]
    fn too_few_gpus_names_the_numbers_and_where_they_came_from() {
        let e = TaskGpus::find_with(&visible("0,1,2,3"), 2, Some(3), no_smi).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Requested more GPUs per node than available. (2 tasks on a node × 3 GPUs per \
             task > 4 GPUs per node); this host's GPUs come from CUDA_VISIBLE_DEVICES=\"0,1,2,3\""
        );
        let e = TaskGpus::find_with(&unset(), 1, Some(1), || Ok(0)).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "(1 tasks on a node × 1 GPUs per task > 0 GPUs per node); this host's GPUs \
                 come from nvidia-smi --list-gpus (CUDA_VISIBLE_DEVICES is unset)"
            ),
            "{e}"
        );
    }

    #[test]
    fn no_gpu_leaves_the_tasks_environment_alone() {
        let gpus = TaskGpus::find_with(&visible(""), 2, None, no_smi).unwrap();
        assert_eq!(gpus, TaskGpus::inherit());
        assert_eq!((gpus.per_task(), gpus.of_task(0)), (None, None));
        let gpus = TaskGpus::find_with(&unset(), 2, None, || Ok(0)).unwrap();
        assert_eq!(gpus, TaskGpus::inherit());
    }

    #[test]
    fn nvidia_smi_counts_when_the_variable_is_unset() {
        let gpus = TaskGpus::find_with(&unset(), 2, None, || Ok(4)).unwrap();
        assert_eq!(shares(&gpus, 2), some(&["0,1", "2,3"]));
        let e = TaskGpus::find_with(&unset(), 2, None, || {
            Err(gpus::Error::NvidiaSmiTimeout {
                program: "nvidia-smi".into(),
                timeout: std::time::Duration::from_secs(10),
            })
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot find this host's GPUs: nvidia-smi --list-gpus did not answer"),
            "{e}"
        );
    }

    #[test]
    fn zero_per_task_hides_every_gpu_without_looking() {
        let gpus = TaskGpus::find_with(&unset(), 3, Some(0), no_smi).unwrap();
        assert_eq!(gpus.per_task(), Some(0));
        assert_eq!(shares(&gpus, 3), some(&["", "", ""]));
    }

    #[test]
    fn fewer_gpus_than_tasks_gives_none_each_as_tensorflow() {
        let gpus = TaskGpus::find_with(&visible("0,1,2"), 4, None, no_smi).unwrap();
        assert_eq!(gpus.per_task(), Some(0));
        assert_eq!(shares(&gpus, 4), some(&["", "", "", ""]));
    }

    #[test]
    fn a_task_past_the_split_gets_no_gpu() {
        let gpus = TaskGpus::find_with(&visible("0,1"), 2, None, no_smi).unwrap();
        assert_eq!(gpus.of_task(2).as_deref(), Some(""));
        assert_eq!(gpus.of_task(u32::MAX).as_deref(), Some(""));
    }
}
