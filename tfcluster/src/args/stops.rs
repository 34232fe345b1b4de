//! `--grace` and `--failure-grace`: how `run`'s launchers (`--local` and `--rdzv`) stop the
//! tasks they supervise, a clean stop and a stop after a failure told apart.

use std::time::Duration;

/// The stop flags of `run`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct StopArgs {
    /// With --local or --rdzv: how long the other tasks may run on after the chief
    /// succeeded, and how long a task stopped cleanly (SIGINT or SIGTERM to tfcluster; with
    /// --rdzv a host joining or leaving) has between SIGTERM and SIGKILL: TensorFlow's
    /// PreemptionCheckpointHandler saves a checkpoint on every worker in it, and the next
    /// round resumes from there.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = humantime::parse_duration)]
    pub(crate) grace: Duration,
    /// With --local or --rdzv: how long the other tasks have between SIGTERM and SIGKILL
    /// when a task failed or (--rdzv) a host was lost. None by default: they are killed at
    /// once, since nothing they hold can be saved without the lost peer
    /// (MultiWorkerMirroredStrategy can finish no all-reduce or checkpoint) and TensorFlow
    /// takes SIGTERM as a preemption notice and runs on, so a grace here is only waited out
    /// before every restart. Give one to a program that must flush something on SIGTERM.
    #[arg(long, value_name = "DUR", default_value = "0s", value_parser = humantime::parse_duration)]
    pub(crate) failure_grace: Duration,
}
