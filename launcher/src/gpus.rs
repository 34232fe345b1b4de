//! [`TaskGpus`]: the host's GPUs shared out among a launcher's local tasks, as each task's
//! `CUDA_VISIBLE_DEVICES`, how many each asks for ([`GpusPerTask`]); [`GpuError`], why they
//! could not be.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use cluster_resolver::Env;
use cluster_resolver::gpus::{self, Count, GpuSource, NodeGpus};
use cluster_spec::__private::quote::quote;

/// The variable that makes TensorFlow grow a process's GPU memory as it needs it, instead of
/// taking nearly all of every GPU it sees at its first use: what lets several tasks share one
/// GPU ([`GpusPerTask::All`]).
pub const TF_FORCE_GPU_ALLOW_GROWTH: &str = "TF_FORCE_GPU_ALLOW_GROWTH";

/// How many of the host's GPUs each local task gets (`--gpus-per-task K|all`).
///
/// ```
/// use launcher::GpusPerTask;
///
/// assert_eq!("2".parse::<GpusPerTask>()?, GpusPerTask::Each(2));
/// assert_eq!("all".parse::<GpusPerTask>()?, GpusPerTask::All);
/// assert_eq!(
///     "two".parse::<GpusPerTask>().unwrap_err().to_string(),
///     "invalid GPUs per task \"two\": expected a number, or `all` for every GPU shared by every task"
/// );
/// # Ok::<(), launcher::InvalidGpusPerTask>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpusPerTask {
    /// `K` GPUs of its own each: local task `i` gets the host's GPUs `i × K .. (i + 1) × K`;
    /// 0 hides every GPU.
    Each(u32),
    /// Every task sees every GPU of the host, as TensorFlow's default does for one process,
    /// with its memory grown as it needs it (`TF_FORCE_GPU_ALLOW_GROWTH=true`, unless the
    /// launcher's environment sets it), so the first task does not take every byte: how
    /// several tasks share one GPU.
    All,
}

impl FromStr for GpusPerTask {
    type Err = InvalidGpusPerTask;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "all" {
            return Ok(Self::All);
        }
        s.parse()
            .map(Self::Each)
            .map_err(|_| InvalidGpusPerTask(s.to_owned()))
    }
}

impl fmt::Display for GpusPerTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Each(count) => write!(f, "{count}"),
            Self::All => f.write_str("all"),
        }
    }
}

/// A GPUs-per-task value that is neither a number nor `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid GPUs per task {}: expected a number, or `all` for every GPU shared by every task",
    quote(.0, 0)
)]
pub struct InvalidGpusPerTask(String);

/// Why a host's GPUs cannot be shared out among its tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The host's GPUs could not be found: `CUDA_VISIBLE_DEVICES` is not UTF-8, or the
    /// driver (NVML, `nvidia-smi`) failed or ran past its deadline.
    #[error("cannot find this host's GPUs")]
    Find(#[source] cluster_resolver::Error),
    /// The host has fewer GPUs than asked for each local task (TensorFlow's wording first,
    /// then the numbers). The shortage is this error's own text, not a cause below it, so it
    /// is no [`source`](std::error::Error::source).
    #[error("{shortage}; this host's GPUs come from {origin}")]
    Share {
        /// The numbers: GPUs of the host, local tasks, GPUs asked for each.
        shortage: cluster_resolver::gpus::Error,
        /// Where the host's GPUs came from, e.g. `CUDA_VISIBLE_DEVICES="0,1,2,3"`.
        origin: String,
    },
}

/// Which of the host's GPUs each local task gets, as its `CUDA_VISIBLE_DEVICES`; see
/// [`TaskGpus::find`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskGpus(Share);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Share {
    /// No GPU found and no count asked for: each task's `CUDA_VISIBLE_DEVICES` is left as
    /// the launcher's own.
    Inherit,
    /// Zero GPUs per task asked for: each task's `CUDA_VISIBLE_DEVICES` is `""`.
    Hide,
    /// Each task gets `per_task` of the host's GPUs.
    Each { gpus: NodeGpus, per_task: u32 },
    /// Every task sees every GPU: its `CUDA_VISIBLE_DEVICES` is left as the launcher's, its
    /// memory grows as it needs it.
    All,
}

impl TaskGpus {
    /// Every task's `CUDA_VISIBLE_DEVICES` left as the launcher's own.
    pub fn inherit() -> Self {
        Self(Share::Inherit)
    }

    /// The split of this host's GPUs among its `tasks_per_node` local tasks, found the way
    /// [`cluster_resolver::gpus`] finds a node's GPUs (as the Slurm resolver does): the
    /// entries of `CUDA_VISIBLE_DEVICES` in `env` as named (ordinals, UUIDs or MIG ids;
    /// `""` is no GPU), else as many as `source` counts (usually [`gpus::host`]: NVML, else
    /// `nvidia-smi`; none when there is no driver).
    ///
    /// - [`GpusPerTask::Each`]`(K)`: local task `i` gets the host's GPUs `i × K .. (i + 1) ×
    ///   K`; fewer than `tasks_per_node × K` GPUs is [`GpuError::Share`], naming the
    ///   numbers and where the host's GPUs came from. `Each(0)` hides every GPU from every
    ///   task (`CUDA_VISIBLE_DEVICES=""`) and looks for none.
    /// - [`GpusPerTask::All`]: every task sees every GPU (its `CUDA_VISIBLE_DEVICES` left as
    ///   the launcher's own) and grows its memory as it needs it; looks for none.
    /// - Not given: the host's GPUs divided evenly, `G / N` each, rounded down (a GPU left
    ///   over stays unused). With fewer GPUs than tasks that is none each, as TensorFlow's
    ///   Slurm resolver decides, and every task gets `""` (a warning says so, and that
    ///   [`GpusPerTask::All`] shares them). A host
    ///   without GPUs leaves each task's `CUDA_VISIBLE_DEVICES` as the launcher's own.
    ///
    /// Asks `source`, when it must, on a thread of its own under its deadline
    /// ([`gpus::count`]), so no async worker blocks on the driver; a launcher
    /// calls it once.
    ///
    /// # Errors
    ///
    /// [`GpuError::Find`] when `CUDA_VISIBLE_DEVICES` is not UTF-8 or the driver fails or
    /// runs past its deadline; [`GpuError::Share`] as said.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a driver query already started runs on its own thread to its deadline, and
    /// its answer is dropped.
    pub async fn find(
        env: &Env,
        tasks_per_node: u32,
        gpus_per_task: Option<GpusPerTask>,
        source: Arc<dyn GpuSource>,
    ) -> Result<Self, GpuError> {
        let needed = !matches!(gpus_per_task, Some(GpusPerTask::Each(0) | GpusPerTask::All))
            && NodeGpus::needs_count(env, None).map_err(GpuError::Find)?;
        let counted = if needed {
            let count = gpus::count(source)
                .await
                .map_err(|e| GpuError::Find(e.into()))?;
            Some(count)
        } else {
            None
        };
        // Not asked when not needed: the variable says, or no GPU is wanted.
        Self::find_with(env, tasks_per_node, gpus_per_task, || {
            Ok(counted.unwrap_or(Count::nvidia_smi(0)))
        })
    }

    fn find_with(
        env: &Env,
        tasks_per_node: u32,
        gpus_per_task: Option<GpusPerTask>,
        count_gpus: impl FnOnce() -> Result<Count, gpus::Error>,
    ) -> Result<Self, GpuError> {
        let gpus_per_task = match gpus_per_task {
            Some(GpusPerTask::Each(0)) => return Ok(Self(Share::Hide)),
            Some(GpusPerTask::All) => {
                tracing::info!(
                    tasks_per_node,
                    "every local task sees every GPU of this host, its memory grown as it needs it"
                );
                return Ok(Self(Share::All));
            }
            Some(GpusPerTask::Each(count)) => Some(count),
            None => None,
        };
        let gpus = NodeGpus::find(env, None, count_gpus).map_err(GpuError::Find)?;
        if gpus.count() == 0 && gpus_per_task.is_none() {
            return Ok(Self(Share::Inherit));
        }
        let per_task = gpus
            .per_task(tasks_per_node, gpus_per_task)
            .map_err(|shortage| GpuError::Share {
                shortage,
                origin: gpus.source(),
            })?;
        if per_task == 0 {
            tracing::warn!(
                gpus = gpus.count(),
                tasks_per_node,
                from = %gpus.source(),
                "fewer GPUs than local tasks: every task gets none (CUDA_VISIBLE_DEVICES=\"\"); \
                 give `all` GPUs per task to share every GPU among the tasks (each sees every \
                 one, its memory grown as it needs it)"
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
    /// as the launcher's own.
    pub fn per_task(&self) -> Option<u32> {
        match &self.0 {
            Share::Inherit | Share::All => None,
            Share::Hide => Some(0),
            Share::Each { per_task, .. } => Some(*per_task),
        }
    }

    /// Whether every task sees every GPU ([`GpusPerTask::All`]): each then grows its GPU
    /// memory as it needs it ([`TF_FORCE_GPU_ALLOW_GROWTH`]).
    pub fn shared(&self) -> bool {
        matches!(self.0, Share::All)
    }

    /// The `CUDA_VISIBLE_DEVICES` of local task `local`: its GPUs, comma separated, `""`
    /// for none; `None` to leave it as the launcher's own.
    pub fn of_task(&self, local: u32) -> Option<String> {
        match &self.0 {
            Share::Inherit | Share::All => None,
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
    use cluster_spec::__private::error_chain::Chain;

    fn visible(value: &str) -> Env {
        Env::from_iter([("CUDA_VISIBLE_DEVICES", value)])
    }

    fn unset() -> Env {
        Env::from_iter::<[(&str, &str); 0]>([])
    }

    fn no_smi() -> Result<Count, gpus::Error> {
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
        let gpus =
            TaskGpus::find_with(&visible("4,5,6,7,8"), 2, Some(GpusPerTask::Each(1)), no_smi)
                .unwrap();
        assert_eq!(shares(&gpus, 2), some(&["4", "5"]));
        let gpus = TaskGpus::find_with(&visible("4,5,6,7"), 2, Some(GpusPerTask::Each(2)), no_smi)
            .unwrap();
        assert_eq!(shares(&gpus, 2), some(&["4,5", "6,7"]));
    }

    #[test]
    fn too_few_gpus_names_the_numbers_and_where_they_came_from() {
        let e = TaskGpus::find_with(&visible("0,1,2,3"), 2, Some(GpusPerTask::Each(3)), no_smi)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Requested more GPUs per node than available. (2 tasks on a node × 3 GPUs per \
             task > 4 GPUs per node); this host's GPUs come from CUDA_VISIBLE_DEVICES=\"0,1,2,3\""
        );
        let e = TaskGpus::find_with(&unset(), 1, Some(GpusPerTask::Each(1)), || {
            Ok(Count::nvidia_smi(0))
        })
        .unwrap_err();
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
        let gpus = TaskGpus::find_with(&unset(), 2, None, || Ok(Count::nvidia_smi(0))).unwrap();
        assert_eq!(gpus, TaskGpus::inherit());
    }

    #[test]
    fn nvidia_smi_counts_when_the_variable_is_unset() {
        let gpus = TaskGpus::find_with(&unset(), 2, None, || Ok(Count::nvidia_smi(4))).unwrap();
        assert_eq!(shares(&gpus, 2), some(&["0,1", "2,3"]));
        let e = TaskGpus::find_with(&unset(), 2, None, || {
            Err(gpus::Error::NvidiaSmiTimeout {
                program: "nvidia-smi".into(),
                timeout: std::time::Duration::from_secs(10),
            })
        })
        .unwrap_err();
        assert!(
            Chain(&e)
                .to_string()
                .starts_with("cannot find this host's GPUs: nvidia-smi --list-gpus did not answer"),
            "{e}"
        );
    }

    #[test]
    fn zero_per_task_hides_every_gpu_without_looking() {
        let gpus = TaskGpus::find_with(&unset(), 3, Some(GpusPerTask::Each(0)), no_smi).unwrap();
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
    fn all_shares_every_gpu_with_every_task_without_looking() {
        let gpus = TaskGpus::find_with(&unset(), 3, Some(GpusPerTask::All), no_smi).unwrap();
        assert!(gpus.shared());
        assert_eq!((gpus.per_task(), shares(&gpus, 3)), (None, vec![None; 3]));
        // The variable stays as the launcher's own: every task sees what it sees.
        let gpus = TaskGpus::find_with(&visible("0"), 2, Some(GpusPerTask::All), no_smi).unwrap();
        assert_eq!(shares(&gpus, 2), vec![None, None]);
        assert!(!TaskGpus::inherit().shared());
    }

    #[test]
    fn gpus_per_task_reads_a_count_or_all() {
        assert_eq!("0".parse(), Ok(GpusPerTask::Each(0)));
        assert_eq!("all".parse(), Ok(GpusPerTask::All));
        for bad in ["", "-1", "ALL", "1.5", "all "] {
            assert_eq!(
                bad.parse::<GpusPerTask>(),
                Err(InvalidGpusPerTask(bad.to_owned()))
            );
        }
        assert_eq!(GpusPerTask::All.to_string(), "all");
        assert_eq!(GpusPerTask::Each(3).to_string(), "3");
    }

    #[test]
    fn a_task_past_the_split_gets_no_gpu() {
        let gpus = TaskGpus::find_with(&visible("0,1"), 2, None, no_smi).unwrap();
        assert_eq!(gpus.of_task(2).as_deref(), Some(""));
        assert_eq!(gpus.of_task(u32::MAX).as_deref(), Some(""));
    }

    #[test]
    fn a_driver_is_asked_off_the_runtime_only_when_needed() {
        use cluster_resolver::gpus::{FixedGpus, Gpu};
        let gpu = |index: u32| Gpu {
            index,
            uuid: format!("GPU-{index}"),
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            pci_bus_id: format!("00000000:00:0{index}.0"),
            memory_free: 80 << 30,
            compute_capability: (9, 0),
            numa_node: None,
        };
        let driver: Arc<dyn GpuSource> = Arc::new(FixedGpus((0..4).map(gpu).collect()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let gpus = runtime
            .block_on(TaskGpus::find(&unset(), 2, None, driver.clone()))
            .unwrap();
        assert_eq!(shares(&gpus, 2), some(&["0,1", "2,3"]));
        let e = runtime
            .block_on(TaskGpus::find(
                &unset(),
                2,
                Some(GpusPerTask::Each(3)),
                driver.clone(),
            ))
            .unwrap_err();
        assert!(
            e.to_string().ends_with(
                "this host's GPUs come from the given GPUs (CUDA_VISIBLE_DEVICES is unset)"
            ),
            "{e}"
        );
        // The variable says: the driver is not asked.
        #[derive(Debug)]
        struct Unplugged;
        impl GpuSource for Unplugged {
            fn count(&self) -> Result<Count, gpus::Error> {
                panic!("the driver must not be asked")
            }
            fn gpus(&self) -> Result<Vec<Gpu>, gpus::Error> {
                panic!("the driver must not be asked")
            }
            fn timeout(&self) -> std::time::Duration {
                std::time::Duration::from_secs(1)
            }
            fn name(&self) -> String {
                "unplugged".to_owned()
            }
        }
        let gpus = runtime
            .block_on(TaskGpus::find(
                &visible("4,5"),
                2,
                None,
                Arc::new(Unplugged),
            ))
            .unwrap();
        assert_eq!(shares(&gpus, 2), some(&["4", "5"]));
        let gpus = runtime
            .block_on(TaskGpus::find(
                &unset(),
                2,
                Some(GpusPerTask::Each(0)),
                Arc::new(Unplugged),
            ))
            .unwrap();
        assert_eq!(shares(&gpus, 2), some(&["", ""]));
        // Every GPU shared: none is counted either.
        let gpus = runtime
            .block_on(TaskGpus::find(
                &unset(),
                2,
                Some(GpusPerTask::All),
                Arc::new(Unplugged),
            ))
            .unwrap();
        assert!(gpus.shared());
    }
}
