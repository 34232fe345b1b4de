//! # launcher — starting and supervising TensorFlow tasks on one host
//!
//! Everything a launcher does on the host its tasks run on, whoever decides what runs:
//! `tfcluster run --local` (a whole cluster on this host), the single-task `tfcluster run`,
//! and the elastic agent of `tfcluster run --rdzv` (the `elastic` crate, whose rounds say
//! what runs) all launch their tasks with it.
//!
//! - [`supervise::Supervisor`]: tasks as child processes, each in a process group of its
//!   own, each output line behind `[name]` (and in files of their own: [`supervise::TaskLogs`]), the end
//!   of each stderr kept for the failure report, stopped as a whole (SIGTERM to each group,
//!   the grace, SIGKILL, waited for); with a [`supervise::Watchdog`], tasks that show no
//!   progress found hung, asked for their Python stack and killed ([`TaskEnd::Hung`]).
//!   [`TaskMetrics`] counts their starts and exits.
//! - [`WarmPool`]: a warm Python interpreter per local task that imported TensorFlow before
//!   its round and runs the script when handed the task's environment ([`Prewarm`] says
//!   which commands qualify), so a restart skips Python's start and `import tensorflow`.
//! - [`TaskEnv`]: a task's environment — its `TF_CONFIG`, its share of the host's GPUs
//!   ([`TaskGpus`]: `CUDA_VISIBLE_DEVICES`, K each or every GPU shared: [`GpusPerTask`]),
//!   unbuffered Python output, Python's faulthandler.
//! - [`ReservedPorts`]: a port per task, held (bound, never listening) until the tasks start.
//! - [`hostname`]: the host's name, as logs and a rendezvous know it.
//! - [`withhold_env`]: variables (a secret its caller holds, as the elastic agent's
//!   rendezvous token) that no process started here inherits.
//! - [`private_file`]: log and error files written where others may write too: never
//!   through a symlink, files 0600, directories 0700 and ours.
//! - [`HealthCheck`]: a command a host must pass (with a deadline) before it joins a round.
//! - [`TaskEnd`] and [`Restart`], how a task ended and what its failure restarted, are the
//!   `failure-policy` crate's, re-exported: what a failure means (failure domains, planned
//!   exits, crash loops) is pure rules there, which `run --local` and the rendezvous apply.
//!
//! **Who depends on it:** the `tfcluster` CLI and `elastic` (its agent), and Rust programs
//! that launch TensorFlow processes themselves. It builds on `cluster-spec` (error wording),
//! `cluster-resolver` (a host's GPUs, found as the Slurm resolver finds them) and
//! `failure-policy` (how a task ended), and pulls
//! tokio (processes, pipes, timers), nix (process groups) and prometheus-client; no gRPC, no
//! rendezvous: nothing here knows who decided what runs.
//!
//! ## Features
//!
//! None. It is Unix-only (process groups, signals) and needs a tokio runtime: the
//! supervisor's waits, output pumps and the watchdog run as tokio tasks.
//!
//! ## Example
//!
//! Two tasks started, one failing; its exit and the end of its stderr, then the other
//! stopped (SIGTERM to its group, then SIGKILL after the grace):
//!
//! ```
//! use std::time::Duration;
//!
//! use launcher::TaskEnd;
//! use launcher::supervise::{Supervisor, TaskSpec, task_end};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sh = |name: &str, script: &str| TaskSpec {
//!     name: name.to_owned(),
//!     argv: vec!["sh".into(), "-c".into(), script.into()],
//!     env: vec![("TF_CONFIG".into(), "{}".into())],
//!     log: None,
//! };
//! let mut tasks = Supervisor::new();
//! tasks.start(sh("ps:0", "exec sleep 60"))?;
//! let worker = tasks.start(sh("worker:0", "echo 'ValueError: bad input' >&2; exit 1"))?;
//!
//! let (index, exit) = tasks.next_exit().await.expect("a task runs");
//! assert_eq!((index, task_end(&exit)), (worker, TaskEnd::Exited(1)));
//! let tail = tasks.stderr_tail(index, Duration::from_secs(5)).await;
//! assert_eq!(tail, "ValueError: bad input\n");
//!
//! tasks.stop(Duration::from_secs(5)).await;
//! assert_eq!(tasks.running(), 0);
//! # Ok(()) }
//! ```
//!
//! ## Differences from TensorFlow and torchrun
//!
//! TensorFlow has no launcher: it reads `TF_CONFIG` and leaves starting, watching and
//! restarting its processes to whatever runs them (its maintainers say respawning failed
//! workers is the orchestrator's job). torchrun's agent is the nearest peer; where this
//! differs:
//!
//! - **Stops leave nothing behind.** Each task is a process group, and a stop signals the
//!   group, so what a task started (a shell's python, TensorFlow's helpers) goes with it;
//!   torchrun signals the worker's pid.
//! - **GPUs are handed out.** Each local task gets its share of the host's GPUs as
//!   `CUDA_VISIBLE_DEVICES` ([`TaskGpus`]); torchrun gives each worker its `LOCAL_RANK` and
//!   leaves picking a device to the script, which TensorFlow, taking every visible GPU,
//!   does not do.
//! - **Restarts are warm** ([`WarmPool`]); torchrun starts every worker cold.
//! - **Hung tasks are failures** ([`supervise::Watchdog`]): torchrun ignores a worker that
//!   is alive but stuck.
//! - **Ports are held, not picked.** Ports are bound together and held until the tasks
//!   start ([`ReservedPorts`]), where TensorFlow's and torch's helpers pick a free port,
//!   close it and hope no one takes it before the task binds it.
//!
//! ## Performance
//!
//! A task's output is copied line by line by a thread per pipe; the supervisor itself holds
//! a handful of bytes per task besides the last 8 KiB of each stderr. A warm interpreter
//! holds what its imports load (TensorFlow 2.21 on a CPU host: about 0.5 GB resident) and
//! saves a restart Python's start and `import tensorflow` (docs/benchmarks.md, the
//! goodput bench).

mod gpus;
mod health_check;
mod hostname;
mod prewarm;
pub mod private_file;
mod reserved_ports;
pub mod supervise;
mod task_env;
mod withheld_env;

pub use failure_policy::{Restart, TaskEnd};
pub use gpus::{GpuError, GpusPerTask, InvalidGpusPerTask, TF_FORCE_GPU_ALLOW_GROWTH, TaskGpus};
pub use health_check::{HealthCheck, HealthCheckFailed};
pub use hostname::hostname;
pub use prewarm::{DEFAULT_MODULE, Prewarm, PrewarmError, WarmPool};
pub use reserved_ports::ReservedPorts;
pub use supervise::{RestartCause, TaskMetrics};
pub use task_env::TaskEnv;
pub use withheld_env::withhold_env;
