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
    Ok(TaskEnv::new(round.tf_config(local_task)?)
        .with_var("TFCLUSTER_ROUND", round.number())
        .with_var("TFCLUSTER_RESTART_COUNT", round.restart_count())
        .with_var("TFCLUSTER_NODE_RANK", round.rank())
        .with_var("TFCLUSTER_LOCAL_TASK", local_task)
        .with_gpus(gpus, local_task)
        .into_vars())
}
