//! What a task's failure restarts: TensorFlow's failure domains.
//!
//! A job whose cluster has parameter servers (`ps`) runs ParameterServerStrategy, whose
//! `ClusterCoordinator` survives a lost worker: it puts the worker's closures back in its
//! queue, waits (up to an hour) for the worker to come back **at the same address**, and
//! rebuilds its datasets. So a worker is restarted alone, in place; the chief (the
//! coordinator) too, as it restores from its checkpoint and reconnects to the servers that
//! run on; a parameter server's variables are gone with it, so it restarts with the chief.
//! A job without `ps` runs MultiWorkerMirroredStrategy, whose collectives cannot take a new
//! process: every training task restarts (the round). The evaluator is outside the training
//! of both: it restarts alone.
//!
//! ```
//! use failure_policy::{Restart, RestartScope, Strategy};
//!
//! let pss = Strategy::of_jobs(["chief", "ps", "worker"]);
//! assert_eq!(pss, Strategy::ParameterServer);
//! assert_eq!(RestartScope::Auto.restart(pss, "worker"), Restart::Task);
//! assert_eq!(RestartScope::Auto.restart(pss, "ps"), Restart::WithChief);
//! let mwms = Strategy::of_jobs(["worker", "evaluator"]);
//! assert_eq!(RestartScope::Auto.restart(mwms, "worker"), Restart::Round);
//! assert_eq!(RestartScope::Auto.restart(mwms, "evaluator"), Restart::Task);
//! ```

use std::fmt;
use std::str::FromStr;

/// Which TensorFlow strategy a job's cluster is for, as its jobs tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Parameter servers (a `ps` job): ParameterServerStrategy with a `ClusterCoordinator`.
    ParameterServer,
    /// No parameter servers: MultiWorkerMirroredStrategy (collectives between workers).
    MultiWorkerMirrored,
}

impl Strategy {
    /// The strategy of a cluster with these job names: ParameterServerStrategy when one is
    /// `ps`.
    pub fn of_jobs<'a>(jobs: impl IntoIterator<Item = &'a str>) -> Self {
        if jobs.into_iter().any(|job| job == "ps") {
            Self::ParameterServer
        } else {
            Self::MultiWorkerMirrored
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ParameterServer => "ParameterServerStrategy",
            Self::MultiWorkerMirrored => "MultiWorkerMirroredStrategy",
        })
    }
}

/// What a failed task's restart takes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Restart {
    /// The task alone, in place: same index, same address, same `TF_CONFIG`.
    Task,
    /// The task and the chief, both in place: a parameter server's variables are gone, and
    /// the coordinator restores them from its checkpoint.
    WithChief,
    /// Every task: the round ends and a new one forms.
    Round,
}

impl Restart {
    /// The word `tfcluster_restarts_total`'s `scope` label and the reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Task => "task",
            Self::WithChief => "task+chief",
            Self::Round => "round",
        }
    }
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How failures are restarted: as the job's strategy allows (`auto`), or forced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RestartScope {
    /// What the strategy survives ([`restart`](Self::restart)).
    #[default]
    Auto,
    /// Every failed task alone (a parameter server with the chief), whatever the strategy:
    /// a MultiWorkerMirroredStrategy job's survivors will not take the new process
    /// ([`warning`](Self::warning)).
    Task,
    /// Every failure restarts every task: torchrun's model, and what tfcluster's launcher did
    /// before it knew TensorFlow's failure domains.
    Round,
}

impl RestartScope {
    /// What a failure of a task of job `job` restarts in a job of `strategy`.
    pub fn restart(self, strategy: Strategy, job: &str) -> Restart {
        match self {
            Self::Round => Restart::Round,
            _ if job == "evaluator" => Restart::Task,
            Self::Task => Self::task_restart(job),
            Self::Auto => match strategy {
                Strategy::ParameterServer => Self::task_restart(job),
                Strategy::MultiWorkerMirrored => Restart::Round,
            },
        }
    }

    fn task_restart(job: &str) -> Restart {
        if job == "ps" {
            Restart::WithChief
        } else {
            Restart::Task
        }
    }

    /// Why this scope will not help a job of `strategy`, when it will not: `task` for a
    /// MultiWorkerMirroredStrategy job.
    pub fn warning(self, strategy: Strategy) -> Option<String> {
        (self == Self::Task && strategy == Strategy::MultiWorkerMirrored).then(|| {
            "--restart-scope task for a job without parameter servers \
             (MultiWorkerMirroredStrategy): its workers' collectives are set up once per \
             process, so the survivors refuse a restarted peer (a new incarnation) and fail \
             in turn; each such failure restarts that task alone"
                .to_owned()
        })
    }

    /// The flag's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Task => "task",
            Self::Round => "round",
        }
    }
}

impl fmt::Display for RestartScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many times one task may be restarted in place in a round, unless told otherwise:
/// ParameterServerStrategy waits up to an hour for a lost worker, so a restart is cheap, but
/// a task that fails ten times in one round more likely has a bad host (or a bug) than bad
/// luck.
pub const DEFAULT_MAX_TASK_RESTARTS: u32 = 10;

/// How a job's failures are restarted: its [`RestartScope`], the bound on one task's
/// in-place restarts in a round, and whether a crash loop ([`CrashLoop`](crate::CrashLoop))
/// stops the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RestartPolicy {
    /// What a failure restarts.
    pub scope: RestartScope,
    /// How many times one task may be restarted in place in a round (planned exits not
    /// counted); the failure past it is the round's.
    pub max_task_restarts: u32,
    /// Go on restarting a crash loop instead of stopping the job.
    pub allow_crash_loops: bool,
}

impl Default for RestartPolicy {
    /// `auto`, [`DEFAULT_MAX_TASK_RESTARTS`], crash loops stop the job.
    fn default() -> Self {
        Self {
            scope: RestartScope::Auto,
            max_task_restarts: DEFAULT_MAX_TASK_RESTARTS,
            allow_crash_loops: false,
        }
    }
}

impl fmt::Display for RestartPolicy {
    /// `restart scope auto, max task restarts 10`, and `, crash loops allowed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "restart scope {}, max task restarts {}",
            self.scope, self.max_task_restarts
        )?;
        if self.allow_crash_loops {
            f.write_str(", crash loops allowed")?;
        }
        Ok(())
    }
}

/// A restart scope that is none of `auto`, `task`, `round`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("restart scope {0:?}: expected auto, task or round")]
pub struct InvalidRestartScope(pub String);

impl FromStr for RestartScope {
    type Err = InvalidRestartScope;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "task" => Ok(Self::Task),
            "round" => Ok(Self::Round),
            _ => Err(InvalidRestartScope(text.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PSS: Strategy = Strategy::ParameterServer;
    const MWMS: Strategy = Strategy::MultiWorkerMirrored;

    #[test]
    fn auto_follows_what_each_strategy_survives() {
        let auto = |s, job| RestartScope::Auto.restart(s, job);
        assert_eq!(auto(PSS, "worker"), Restart::Task);
        assert_eq!(auto(PSS, "chief"), Restart::Task);
        assert_eq!(auto(PSS, "ps"), Restart::WithChief);
        assert_eq!(auto(PSS, "evaluator"), Restart::Task);
        assert_eq!(auto(MWMS, "worker"), Restart::Round);
        assert_eq!(auto(MWMS, "chief"), Restart::Round);
        assert_eq!(auto(MWMS, "evaluator"), Restart::Task);
    }

    #[test]
    fn forced_scopes_override_the_strategy() {
        assert_eq!(RestartScope::Round.restart(PSS, "worker"), Restart::Round);
        assert_eq!(
            RestartScope::Round.restart(MWMS, "evaluator"),
            Restart::Round
        );
        assert_eq!(RestartScope::Task.restart(MWMS, "worker"), Restart::Task);
        assert_eq!(RestartScope::Task.restart(MWMS, "ps"), Restart::WithChief);
        assert!(
            RestartScope::Task
                .warning(MWMS)
                .unwrap()
                .contains("incarnation")
        );
        assert_eq!(RestartScope::Task.warning(PSS), None);
        assert_eq!(RestartScope::Auto.warning(MWMS), None);
    }

    #[test]
    fn the_strategy_is_read_from_the_jobs() {
        assert_eq!(Strategy::of_jobs(["chief", "worker", "ps"]), PSS);
        assert_eq!(Strategy::of_jobs(["chief", "worker"]), MWMS);
        assert_eq!(Strategy::of_jobs([]), MWMS);
    }

    #[test]
    fn scopes_parse_and_bad_ones_are_named() {
        for scope in [RestartScope::Auto, RestartScope::Task, RestartScope::Round] {
            assert_eq!(scope.as_str().parse::<RestartScope>(), Ok(scope));
        }
        let err = "node".parse::<RestartScope>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "restart scope \"node\": expected auto, task or round"
        );
    }
}
