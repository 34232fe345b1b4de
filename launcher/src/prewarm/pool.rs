//! [`WarmPool`]: a launcher's warm interpreters, one per local task, kept across rounds.
//!
//! A local task's next interpreter starts once the one handed the current round has done its
//! imports: two imports at once would share the host's cores, and the round's own start up
//! (the one that matters) would take up to twice as long.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cluster_spec::__private::error_chain::Chain;
use tokio::sync::oneshot;

use super::warm::{Imported, Warm};
use super::{Prewarm, PrewarmError, PythonCommand};
use crate::gpus::TaskGpus;
use crate::supervise::{SpawnError, Supervisor, TaskSpec};
use crate::task_env::slot_env;

/// One warm interpreter per local task (or none: prewarm off, a command that does not
/// qualify, modules that do not import); what is left of it is killed when it is dropped.
#[derive(Debug)]
pub struct WarmPool {
    /// What starts an interpreter; `None`: every task starts cold.
    spawner: Option<Arc<Spawner>>,
    slots: Vec<Slot>,
    /// Each local task's interpreter handed the current round, until its imports are done.
    handed: Vec<Option<Imported>>,
}

/// What starts a local task's warm interpreter.
#[derive(Debug)]
struct Spawner {
    python: PythonCommand,
    modules: Vec<String>,
    /// Each local task's fixed variables.
    envs: Vec<Vec<(String, String)>>,
    /// Set once a module did not import: no more interpreters are started.
    failed: Arc<AtomicBool>,
}

/// A local task's next interpreter.
#[derive(Debug)]
enum Slot {
    Empty,
    /// To start once the interpreter of the current round has imported.
    Starting(oneshot::Receiver<Warm>),
    Warm(Box<Warm>),
}

impl Spawner {
    /// Local task `local`'s interpreter; `None` (a warning said why) when it cannot start.
    fn spawn(&self, local: u32) -> Option<Warm> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let env = &self.envs[local as usize];
        match Warm::spawn(&self.python, &self.modules, env, local, self.failed.clone()) {
            Ok(warm) => Some(warm),
            Err(e) => {
                tracing::warn!(local_task = local, error = %Chain(&e), "cannot start a warm interpreter; the task starts cold");
                None
            }
        }
    }
}

impl WarmPool {
    /// Checks `command` (a Python command's script must exist, `prewarm`'s modules must be
    /// found) and, when it qualifies and `prewarm` is on, starts a warm interpreter for each
    /// of `tasks` local tasks, each with its share of `gpus`.
    ///
    /// # Errors
    ///
    /// [`PrewarmError::NoScript`] when the script does not exist, [`PrewarmError::Module`]
    /// when a module of [`Prewarm::Modules`] cannot be found.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: interpreters already started are killed with the dropped future.
    pub async fn start(
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
        let spawner = python.filter(|_| !modules.is_empty()).map(|python| {
            Arc::new(Spawner {
                python,
                modules,
                envs: (0..tasks).map(|local| slot_env(local, gpus)).collect(),
                failed: Arc::default(),
            })
        });
        let mut pool = Self {
            spawner,
            slots: (0..tasks).map(|_| Slot::Empty).collect(),
            handed: (0..tasks).map(|_| None).collect(),
        };
        pool.fill();
        Ok(pool)
    }

    /// Starts an interpreter for each local task that has none: at once, or in the
    /// background once the one handed the current round has imported.
    pub fn fill(&mut self) {
        let Some(spawner) = &self.spawner else {
            return;
        };
        for (local, slot) in self.slots.iter_mut().enumerate() {
            if !matches!(slot, Slot::Empty) {
                continue;
            }
            let local = local as u32;
            *slot = match self.handed[local as usize].take() {
                None => match spawner.spawn(local) {
                    Some(warm) => Slot::Warm(Box::new(warm)),
                    None => Slot::Empty,
                },
                Some(imported) => {
                    let (mut send, started) = oneshot::channel();
                    let spawner = spawner.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            () = imported.done() => {}
                            // The pool is gone: nothing to start.
                            () = send.closed() => return,
                        }
                        if let Some(warm) = spawner.spawn(local) {
                            // A pool gone meanwhile drops (kills) it.
                            let _ = send.send(warm);
                        }
                    });
                    Slot::Starting(started)
                }
            };
        }
    }

    /// Starts `spec` as local task `local`: in its warm interpreter when it has one that
    /// takes the round (one still importing does: it imports, then runs), else cold
    /// ([`Supervisor::start`]).
    ///
    /// # Errors
    ///
    /// Those of [`Supervisor::start`], for a cold start.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped during a handoff, the interpreter may run the task
    /// unsupervised until its group is killed.
    pub async fn start_task(
        &mut self,
        tasks: &mut Supervisor,
        local: u32,
        spec: TaskSpec,
    ) -> Result<usize, SpawnError> {
        let slot = self
            .slots
            .get_mut(local as usize)
            .map(|slot| std::mem::replace(slot, Slot::Empty));
        let warm = match slot {
            Some(Slot::Warm(warm)) => Some(*warm),
            Some(Slot::Starting(mut started)) => started.try_recv().ok(),
            Some(Slot::Empty) | None => None,
        };
        if let Some(warm) = warm {
            // Its progress file (with a watchdog) is named in the environment it is handed.
            let (beacon, progress_file) = tasks.prepare()?;
            let env: Vec<(String, String)> =
                spec.env.iter().cloned().chain(progress_file).collect();
            match warm.hand_over(&env).await {
                Ok((process, imported)) => {
                    if imported.is_done() {
                        tracing::debug!(task = %spec.name, "started in its warm interpreter");
                    } else {
                        // Said: the restart then takes what is left of the imports.
                        tracing::info!(task = %spec.name, "started in its warm interpreter, whose imports are not done yet: the task runs once they are");
                    }
                    self.handed[local as usize] = Some(imported);
                    return Ok(tasks.adopt(spec.name, spec.log, process, beacon));
                }
                Err(why) => {
                    tracing::warn!(task = %spec.name, why, "the warm interpreter cannot take its round; starting cold");
                }
            }
        }
        tasks.start(spec)
    }
}
