//! [`WarmPool`]: the agent's warm interpreters, one per local task, kept across rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cluster_spec::__private::error_chain::Chain;

use super::warm::Warm;
use super::{Prewarm, PrewarmError, PythonCommand};
use crate::TaskGpus;
use crate::supervise::{SpawnError, Supervisor, TaskSpec};
use crate::task_env::slot_env;

/// One warm interpreter per local task (or none: prewarm off, a command that does not
/// qualify, modules that do not import); what is left of it is killed when it is dropped.
#[derive(Debug)]
pub(crate) struct WarmPool {
    /// `None`: every task starts cold.
    python: Option<PythonCommand>,
    modules: Vec<String>,
    /// Each local task's fixed variables.
    envs: Vec<Vec<(String, String)>>,
    slots: Vec<Option<Warm>>,
    /// Set once a module did not import: no more interpreters are started.
    failed: Arc<AtomicBool>,
}

impl WarmPool {
    /// Checks `command` ([`PythonCommand::check`]) and, when it qualifies and `prewarm` is
    /// on, starts a warm interpreter for each of `tasks` local tasks.
    pub(crate) async fn start(
        command: &[String],
        prewarm: &Prewarm,
        gpus: &TaskGpus,
        tasks: u32,
    ) -> Result<Self, PrewarmError> {
        let python = PythonCommand::parse(command);
        if let Some(python) = &python {
            python.check(prewarm).await?;
        }
        let modules = prewarm.modules();
        let mut pool = Self {
            python: python.filter(|_| !modules.is_empty()),
            modules,
            envs: (0..tasks).map(|local| slot_env(local, gpus)).collect(),
            slots: (0..tasks).map(|_| None).collect(),
            failed: Arc::default(),
        };
        pool.fill();
        Ok(pool)
    }

    /// Starts an interpreter for each local task that has none.
    pub(crate) fn fill(&mut self) {
        let Some(python) = &self.python else {
            return;
        };
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        for (local, slot) in self.slots.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let failed = self.failed.clone();
            match Warm::spawn(
                python,
                &self.modules,
                &self.envs[local],
                local as u32,
                failed,
            ) {
                Ok(warm) => *slot = Some(warm),
                Err(e) => {
                    tracing::warn!(error = %Chain(&e), "cannot start a warm interpreter; tasks start cold");
                    self.python = None;
                    return;
                }
            }
        }
    }

    /// Starts `spec` as local task `local`: in its warm interpreter when it has one that
    /// takes the round, else cold ([`Supervisor::start`]).
    ///
    /// # Errors
    ///
    /// Those of [`Supervisor::start`], for a cold start.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped during a handoff, the interpreter may run the task unsupervised
    /// until its group is killed.
    pub(crate) async fn start_task(
        &mut self,
        tasks: &mut Supervisor,
        local: u32,
        spec: TaskSpec,
    ) -> Result<usize, SpawnError> {
        if let Some(warm) = self.slots.get_mut(local as usize).and_then(Option::take) {
            match warm.hand_over(&spec.env).await {
                Ok(process) => {
                    tracing::debug!(task = %spec.name, "started in its warm interpreter");
                    return Ok(tasks.adopt(spec.name, process));
                }
                Err(why) => {
                    tracing::warn!(task = %spec.name, why, "the warm interpreter cannot take its round; starting cold");
                }
            }
        }
        tasks.start(spec)
    }
}

impl Drop for WarmPool {
    /// The agent's spare interpreters end with it.
    fn drop(&mut self) {
        for warm in self.slots.iter().flatten() {
            warm.kill();
        }
    }
}
