//! [`task_env`]: the environment of an agent's local task in a round: the launcher's
//! [`TaskEnv`] with the round's variables added.

use launcher::{TaskEnv, TaskGpus};

use crate::{Error, Round};

/// The environment of the agent's local task `local_task` of `round`: its `TF_CONFIG`, the
/// round's number and restart count, the node's rank and the task's local index, and what
/// [`TaskEnv`] adds (its GPUs, unbuffered output, faulthandler).
pub fn task_env(
    round: &Round,
    local_task: u32,
    gpus: &TaskGpus,
) -> Result<Vec<(String, String)>, Error> {
    round_task_env(round, local_task, gpus, 0)
}

/// [`task_env`] of a task restarted in place `restarts` times in its round: its
/// `TFCLUSTER_RESTART_COUNT` counts them besides the round's restarts.
pub(crate) fn round_task_env(
    round: &Round,
    local_task: u32,
    gpus: &TaskGpus,
    restarts: u32,
) -> Result<Vec<(String, String)>, Error> {
    Ok(TaskEnv::new(round.tf_config(local_task)?)
        .with_var("TFCLUSTER_ROUND", round.number())
        .with_var(
            "TFCLUSTER_RESTART_COUNT",
            round.restart_count().saturating_add(restarts),
        )
        .with_var("TFCLUSTER_NODE_RANK", round.rank())
        .with_var("TFCLUSTER_LOCAL_TASK", local_task)
        .with_gpus(gpus, local_task)
        .into_vars())
}
