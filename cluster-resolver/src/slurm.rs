//! [`SlurmClusterResolver`]: the cluster of a Slurm job step, as TensorFlow's
//! `tf.distribute.cluster_resolver.SlurmClusterResolver`, but with every task at the address of
//! the node Slurm actually started it on.
//!
//! Each task of `srun -N3 -n5 python train.py` reads its step's variables —
//! `SLURM_PROCID` (its rank), `SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST`,
//! `SLURM_STEP_TASKS_PER_NODE`, and `SLURMD_NODENAME`, `SLURM_DISTRIBUTION`,
//! `CUDA_VISIBLE_DEVICES` — and they all compute the same cluster:
//!
//! - **Jobs.** The jobs map (default: every task a `worker`) is walked in job-name order, as
//!   TensorFlow does: the first job takes ranks `0..n0`, the next `n0..n0+n1`, and so on. A
//!   task's job and index follow from its rank.
//! - **Addresses.** Rank `k`'s address is the node Slurm put rank `k` on, which follows from the
//!   nodelist (in Slurm's order), the tasks per node and the distribution (block or cyclic),
//!   with port `port_base + i` for the node's `i`-th task, so no two tasks of a node share a
//!   port.
//! - **GPUs.** The node's GPUs (`gpus_per_node`, else `CUDA_VISIBLE_DEVICES`, else the
//!   driver's count: NVML, else `nvidia-smi --list-gpus`) are handed out `gpus_per_task` at a time (default: the node's
//!   GPUs divided by the most tasks any node has) to the node's tasks in order. Zero GPUs is a
//!   CPU-only cluster. The [`gpus`] module makes this decision, for this resolver
//!   and for `elastic`'s agent alike.
//!
//! Everything is read again from the [`Env`] on every call, as TensorFlow re-reads its
//! environment; [`SlurmClusterResolver::resolve`] gives all the answers of one reading at once.
//!
//! ```
//! use cluster_resolver::{Env, SlurmClusterResolver};
//!
//! // What rank 3 of `srun -N3 -n5` sees on a node whose allocated GPUs are 4..7.
//! let env = Env::from_iter([
//!     ("SLURM_PROCID", "3"),
//!     ("SLURM_STEP_NUM_TASKS", "5"),
//!     ("SLURM_STEP_NODELIST", "n[9-11]"),
//!     ("SLURM_STEP_TASKS_PER_NODE", "2(x2),1"),
//!     ("SLURMD_NODENAME", "n10"),
//!     ("CUDA_VISIBLE_DEVICES", "4,5,6,7"),
//! ]);
//! let step = SlurmClusterResolver::new(env).resolve()?;
//! assert_eq!(
//!     step.spec().to_json(),
//!     r#"{"worker":["n9:8888","n9:8889","n10:8888","n10:8889","n11:8888"]}"#
//! );
//! assert_eq!((step.task_type(), step.task_id()), ("worker", 3));
//! assert_eq!(step.address(), "n10:8889");
//! // Two GPUs per task; this is the node's second task, so it gets the node's GPUs 6 and 7.
//! // Put this into the environment of the process that runs TensorFlow.
//! assert_eq!(step.cuda_visible_devices(), Some("6,7"));
//! # Ok::<(), cluster_resolver::Error>(())
//! ```
//!
//! As a [`ClusterResolver`], with a jobs map (ranks 0..1 are `ps`, 2..4 `worker`, by name):
//!
//! ```
//! use cluster_resolver::{ClusterResolver, Env, SlurmClusterResolver};
//!
//! # async fn run() -> Result<(), cluster_resolver::Error> {
//! let env = Env::from_iter([
//!     ("SLURM_PROCID", "1"),
//!     ("SLURM_STEP_NODELIST", "node[1-3]"),
//!     ("SLURM_STEP_TASKS_PER_NODE", "2(x2),1"),
//!     ("SLURM_DISTRIBUTION", "cyclic"),
//! ]);
//! let resolver = SlurmClusterResolver::new(env)
//!     .with_jobs([("worker", 3), ("ps", 2)])
//!     .with_port_base(2222);
//! let spec = resolver.cluster_spec().await?;
//! // cyclic: ranks 0..4 run on node1, node2, node3, node1, node2
//! assert_eq!(spec.job_tasks("ps")?, [Some("node1:2222"), Some("node2:2222")]);
//! assert_eq!(resolver.task_type().as_deref(), Some("ps"));
//! assert_eq!(resolver.master(None, None, None).await?, "grpc://node2:2222");
//! assert!(resolver.num_accelerators(None, None).await?.is_empty()); // no GPUs here
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Errors
//!
//! A missing step variable is TensorFlow's `SLURM_PROCID not found in environment. Not running
//! inside a SLURM step?`; too few GPUs and a jobs map that does not add up to the step's tasks
//! start with TensorFlow's `Requested more GPUs per node than available.` and `Requested 6
//! tasks but only 5 were assigned.`, followed by the numbers and where they came from. Every
//! other error names the variable or option and its value. The step's own failures are this
//! module's [`Error`], the node's GPUs' (too few, `nvidia-smi` failing) are
//! [`gpus::Error`]; a missing or malformed variable, hostlist or
//! tasks-per-node list is the crate's [`Error`](crate::Error), which wraps both.
//!
//! # Differences from TensorFlow
//!
//! Checked against TensorFlow 2.21's resolver by the differential test in
//! `tests/cluster_resolver/slurm/tensorflow.rs`, which asserts each difference below that
//! shows in TensorFlow's answers (all but the `nvidia-smi` deadline).
//!
//! - **Rank order.** TensorFlow lays the tasks out over the hosts **sorted by name**, as
//!   strings, and always in blocks: with `SLURM_STEP_NODELIST=n[9-10]` it puts ranks 0 and 1 on
//!   `n10`, while Slurm started them on `n9`; with `--distribution=cyclic` every rank but the
//!   first gets another node's address. Here rank `k` has the address of the node Slurm put it
//!   on: nodelist order, block (`SLURM_DISTRIBUTION` unset or `block`) or cyclic (round-robin
//!   over the nodes that still have tasks to take, as Slurm's `_task_layout_cyclic`). Any other
//!   distribution (`plane`, `arbitrary`, `cyclic:block`, …) is
//!   [`Error::UnsupportedDistribution`]. When `SLURMD_NODENAME` is set and is not the node
//!   computed for this rank, that is [`Error::WrongNode`], not a silently wrong cluster.
//!   Where node names sort as Slurm orders them and the distribution is block, the cluster is
//!   the same as TensorFlow's.
//! - **No GPUs.** A node without GPUs is a CPU-only cluster (`gpus_per_task` 0, each task's
//!   `CUDA_VISIBLE_DEVICES` is `""`, [`num_accelerators`](ClusterResolver::num_accelerators) is
//!   empty). TensorFlow fails with `ValueError: range() arg 3 must not be zero`
//!   (tensorflow#56894), and with `FileNotFoundError` where `nvidia-smi` is not installed; here
//!   a missing `nvidia-smi`, or one that says "No devices were found", is zero GPUs. Explicit
//!   `with_gpus_per_task(0)` works too.
//! - **Which GPUs.** TensorFlow gives a task the ordinals `0..n` of its node whatever the node's
//!   `CUDA_VISIBLE_DEVICES` was, so on a node whose allocation is GPUs 4..7 its tasks use GPUs
//!   that belong to another job (the bug of jax#23452). Here a task gets its share **of the
//!   visible list** (`4,5` and `6,7`; UUIDs are kept as written). `CUDA_VISIBLE_DEVICES=""` is
//!   zero GPUs (TensorFlow counts one), and a `gpus_per_node` above the number of visible GPUs
//!   is [`gpus::Error::GpusNotVisible`] (TensorFlow
//!   would hand out GPUs the task cannot see).
//! - **The environment is not written.** TensorFlow sets `os.environ["CUDA_VISIBLE_DEVICES"]`
//!   from `cluster_spec()` (with `auto_set_gpu`, the default). Changing the environment of a
//!   running multi-threaded process is unsound (`std::env::set_var` is `unsafe` in Rust 2024,
//!   and this crate forbids `unsafe`), and too late for a CUDA runtime already loaded, so
//!   [`SlurmClusterResolver::cuda_visible_devices`] **returns** the value: put it in the
//!   environment of the process that runs TensorFlow (`Command::env("CUDA_VISIBLE_DEVICES",
//!   value)`). Without `auto_set_gpu` it is `None`.
//! - **The GPUs are counted in-process, with a deadline, off the async threads.** TensorFlow
//!   runs `nvidia-smi --list-gpus` and waits for it forever; here NVML is asked (loaded at run
//!   time; `nvidia-smi` only where it cannot be), under a deadline
//!   ([`DEFAULT_NVIDIA_SMI_TIMEOUT`], settable with `with_nvidia_smi`), and the async methods
//!   ask on a thread of their own, so `connect_to_cluster(&slurm)` never blocks a runtime
//!   worker. The answer is remembered (a node's GPUs do not change during a step); TensorFlow
//!   runs it once, in the constructor.
//! - **No hidden state.** TensorFlow sets `task_type`/`task_id` as a side effect of
//!   `cluster_spec()`, so before the first call they are `None` and `master()` is `''`, and
//!   its constructor reads the GPUs once. Here every call reads the environment, so
//!   [`task_type`](ClusterResolver::task_type), [`task_id`](ClusterResolver::task_id) and
//!   [`master`](ClusterResolver::master) answer as TensorFlow's do after a `cluster_spec()`
//!   call (`master()` is this task's `grpc://node:port`), and `None` when the environment does
//!   not resolve. There are no setters: TensorFlow's are overwritten by the next
//!   `cluster_spec()` anyway; pass `task_type`/`task_id` to `master` instead.
//! - **Validation.** TensorFlow pairs nodes with counts by `zip` (extra entries of either list
//!   are dropped) and collapses a node named twice (the last count wins); here both are errors
//!   ([`Error::NodeCountMismatch`], [`Error::DuplicateNode`]). A `SLURM_PROCID` outside
//!   the step is [`Error::RankOutOfRange`] (TensorFlow: an `IndexError`, or no task at all
//!   without `auto_set_gpu`); with a jobs map, a set `SLURM_STEP_NUM_TASKS` must still agree
//!   with the tasks per node ([`Error::NumTasksMismatch`]; TensorFlow does not read it
//!   then); ports past 65535 are [`Error::PortOverflow`] (TensorFlow writes `n1:65536`);
//!   a step of more than [`MAX_TASKS`] tasks or [`MAX_SPEC_BYTES`] bytes of addresses is
//!   refused before anything that large is allocated, and so is a node of more than
//!   [`MAX_GPUS_PER_NODE`] GPUs from `gpus_per_node` or `nvidia-smi` (TensorFlow builds one
//!   string per GPU ordinal, and `2**32` of them exhaust memory). Numbers
//!   are plain ASCII digits (Python's `int()` also takes `+5`, ` 5` and `٥`), and the error
//!   names the variable and its value.
//! - **`tasks_per_node` as a map** ([`TasksPerNode::PerNode`]) is a list in node order, and
//!   ranks are laid out in that order; TensorFlow's `dict` is sorted by host name.
//! - **`num_accelerators`** is `{"GPU": gpus_per_task}` as in TensorFlow, and empty when tasks
//!   get no GPU.

mod jobs;
mod node_names;
mod placement;
mod step;
mod tasks_per_node;
mod vars;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

pub use crate::gpus::{DEFAULT_NVIDIA_SMI_TIMEOUT, MAX_GPUS_PER_NODE};
pub use placement::Distribution;
pub use step::{MAX_SPEC_BYTES, MAX_TASKS, SlurmStep};
pub use tasks_per_node::TasksPerNode;

pub use crate::error::slurm::Error;

use crate::gpus::{self, Count, GpuSource, NodeGpus, NvidiaSmi};
use crate::resolver::master_from_spec;
use crate::{ClusterResolver, Env};

/// The cluster of the Slurm job step this process runs in; see the [module
/// documentation](self) for how it is computed and how it differs from TensorFlow's.
///
/// The options are TensorFlow's constructor arguments, with the same defaults: every task a
/// `worker`, `port_base` 8888, GPUs found on the node and shared evenly, tasks per node from
/// Slurm, `auto_set_gpu` on, RPC layer `grpc`.
#[derive(Debug, Clone)]
pub struct SlurmClusterResolver {
    env: Env,
    options: step::Options,
    rpc_layer: Option<String>,
    /// The GPU source's count, once it gave one.
    gpu_count: OnceLock<Count>,
}

impl SlurmClusterResolver {
    /// A resolver reading `env` (usually [`Env::process`]), with TensorFlow's defaults.
    pub fn new(env: Env) -> Self {
        Self {
            env,
            options: step::Options::default(),
            rpc_layer: Some("grpc".to_owned()),
            gpu_count: OnceLock::new(),
        }
    }

    /// Sets the jobs and their number of tasks (TensorFlow's `jobs`), which must add up to the
    /// step's tasks. Ranks go to jobs in name order, whatever the order given here.
    pub fn with_jobs<I, S>(mut self, jobs: I) -> Self
    where
        I: IntoIterator<Item = (S, u32)>,
        S: Into<String>,
    {
        self.options.jobs = Some(jobs.into_iter().map(|(j, n)| (j.into(), n)).collect());
        self
    }

    /// Sets the port of each node's first task; the node's `i`-th task listens on
    /// `port_base + i`. Default 8888.
    pub fn with_port_base(mut self, port_base: u16) -> Self {
        self.options.port_base = port_base;
        self
    }

    /// Sets the number of GPUs of each node, instead of counting `CUDA_VISIBLE_DEVICES` or
    /// asking the driver (NVML, else `nvidia-smi`). Zero is a CPU-only cluster; more than [`MAX_GPUS_PER_NODE`] is
    /// [`gpus::Error::TooManyGpus`] when the step is
    /// resolved.
    pub fn with_gpus_per_node(mut self, gpus: u32) -> Self {
        self.options.gpus_per_node = Some(gpus);
        self
    }

    /// Sets the number of GPUs of each task, instead of the node's GPUs divided by the most
    /// tasks on any node.
    pub fn with_gpus_per_task(mut self, gpus: u32) -> Self {
        self.options.gpus_per_task = Some(gpus);
        self
    }

    /// Sets the tasks per node instead of reading `SLURM_STEP_TASKS_PER_NODE`: a number for
    /// every node (`with_tasks_per_node(4)`), or nodes and counts.
    pub fn with_tasks_per_node(mut self, tasks_per_node: impl Into<TasksPerNode>) -> Self {
        self.options.tasks_per_node = Some(tasks_per_node.into());
        self
    }

    /// Whether [`cuda_visible_devices`](Self::cuda_visible_devices) computes a value (default
    /// `true`; TensorFlow's `auto_set_gpu`).
    pub fn with_auto_set_gpu(mut self, auto_set_gpu: bool) -> Self {
        self.options.auto_set_gpu = auto_set_gpu;
        self
    }

    /// Sets the RPC layer `master` prefixes, e.g. `"grpc"` (the default); `""` for none.
    pub fn with_rpc_layer(mut self, rpc_layer: impl Into<String>) -> Self {
        let layer = rpc_layer.into();
        self.rpc_layer = (!layer.is_empty()).then_some(layer);
        self
    }

    /// Counts the node's GPUs with this `nvidia-smi` program (a path, or a name looked up in
    /// `PATH`), killed after `timeout` ([`DEFAULT_NVIDIA_SMI_TIMEOUT`] by default), instead of
    /// asking NVML first.
    pub fn with_nvidia_smi(self, program: impl Into<PathBuf>, timeout: Duration) -> Self {
        self.with_gpu_source(Arc::new(NvidiaSmi::new(program, timeout)))
    }

    /// Counts the node's GPUs with `source` (default: [`gpus::host`], NVML, else
    /// `nvidia-smi` from `PATH`), when neither `gpus_per_node` nor `CUDA_VISIBLE_DEVICES` says.
    pub fn with_gpu_source(mut self, source: Arc<dyn GpuSource>) -> Self {
        self.options.gpu_source = source;
        self.gpu_count = OnceLock::new();
        self
    }

    /// Reads the environment and resolves the step: the cluster and this task's place in it.
    ///
    /// May ask the GPU source (blocking this thread, at most its timeout) the first time, when
    /// neither `gpus_per_node` nor `CUDA_VISIBLE_DEVICES` gives the node's GPUs. The async
    /// methods ([`cluster_spec`](ClusterResolver::cluster_spec), ...) ask it on a thread of
    /// their own instead.
    pub fn resolve(&self) -> Result<SlurmStep, crate::Error> {
        step::resolve(&self.options, &self.env, || {
            if let Some(&count) = self.gpu_count.get() {
                return Ok(count);
            }
            let count = self.options.gpu_source.count()?;
            Ok(*self.gpu_count.get_or_init(|| count))
        })
    }

    /// [`resolve`](Self::resolve) for async code: the GPUs, when they must be counted, are
    /// counted off the async threads ([`gpus::count`]), under the source's deadline.
    async fn resolve_async(&self) -> Result<SlurmStep, crate::Error> {
        if self.gpu_count.get().is_none()
            && NodeGpus::needs_count(&self.env, self.options.gpus_per_node)?
        {
            let count = gpus::count(self.options.gpu_source.clone()).await?;
            self.gpu_count.get_or_init(|| count);
        }
        self.resolve()
    }

    /// The `CUDA_VISIBLE_DEVICES` value for this task: its `gpus_per_task` GPUs out of its
    /// node's (as the node's `CUDA_VISIBLE_DEVICES` names them, else ordinals), comma separated,
    /// `""` for none; `None` when `auto_set_gpu` is off.
    ///
    /// TensorFlow writes this into its own process environment; here the caller puts it into
    /// the environment of the process it starts:
    ///
    /// ```no_run
    /// use cluster_resolver::{Env, SlurmClusterResolver};
    ///
    /// let resolver = SlurmClusterResolver::new(Env::process());
    /// let mut trainer = std::process::Command::new("python3");
    /// trainer.arg("train.py");
    /// if let Some(devices) = resolver.cuda_visible_devices()? {
    ///     trainer.env("CUDA_VISIBLE_DEVICES", devices);
    /// }
    /// trainer.status()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cuda_visible_devices(&self) -> Result<Option<String>, crate::Error> {
        Ok(self.resolve()?.cuda_visible_devices().map(str::to_owned))
    }

    /// This task's job and index (TensorFlow's `get_task_info()`, which is `(None, None)` until
    /// `cluster_spec()` ran; here it is always computed).
    pub fn task_info(&self) -> Result<(String, u32), crate::Error> {
        let step = self.resolve()?;
        Ok((step.task_type().to_owned(), step.task_id()))
    }
}

#[async_trait]
impl ClusterResolver for SlurmClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, crate::Error> {
        Ok(self.resolve_async().await?.into_spec())
    }

    /// The address of task `task_id` of job `task_type`, each defaulting to this task's, with
    /// the RPC layer (the argument, else the resolver's) as `"grpc://"`.
    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, crate::Error> {
        let step = self.resolve_async().await?;
        let task_type = task_type.unwrap_or(step.task_type());
        let task_id = task_id.unwrap_or(step.task_id());
        // TensorFlow's `rpc_layer or self.rpc_layer`: an empty argument falls through too.
        let layer = rpc_layer
            .filter(|l| !l.is_empty())
            .or(self.rpc_layer.as_deref());
        master_from_spec(step.spec(), Some(task_type), Some(task_id), layer, "")
    }

    fn task_type(&self) -> Option<String> {
        self.resolve().ok().map(|s| s.task_type().to_owned())
    }

    fn task_id(&self) -> Option<u32> {
        self.resolve().ok().map(|s| s.task_id())
    }

    fn rpc_layer(&self) -> Option<String> {
        self.rpc_layer.clone()
    }

    /// `{"GPU": gpus_per_task}` for any task (all tasks get as many), empty when it is zero.
    async fn num_accelerators(
        &self,
        _task_type: Option<&str>,
        _task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, crate::Error> {
        let gpus = self.resolve_async().await?.gpus_per_task();
        Ok((gpus > 0)
            .then(|| ("GPU".to_owned(), gpus))
            .into_iter()
            .collect())
    }
}
