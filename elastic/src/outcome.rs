//! How tasks, rounds and jobs end: what agents report and what the rendezvous tells every
//! node.

use std::fmt;
use std::time::Duration;

use failure_policy::{Restart, TaskEnd};

/// How a task ended, as its agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// It exited with this status (0 is success).
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It could not be started or watched (the program is missing, ...).
    Error(String),
    /// It was hung: it showed no progress (no line of output, no touch of its progress
    /// file) for `quiet`, the launcher's watchdog, and was killed (after its Python stack was
    /// asked for: the stderr tail of its report holds it).
    Hung {
        /// How long it was quiet: the watchdog's period.
        quiet: Duration,
    },
}

impl TaskStatus {
    /// Whether the task succeeded (exit status 0).
    pub fn success(&self) -> bool {
        matches!(self, Self::Exited(0))
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with status {code}"),
            Self::Signaled(signal) => write!(f, "was killed by signal {signal}"),
            Self::Error(error) => write!(f, "could not run: {error}"),
            Self::Hung { quiet } => write!(f, "hung: no progress for {quiet:?}"),
        }
    }
}

/// The launcher's words for how a task ended, in the rendezvous's: the agent reports its
/// tasks' ends with it.
impl From<TaskEnd> for TaskStatus {
    fn from(end: TaskEnd) -> Self {
        match end {
            TaskEnd::Exited(code) => Self::Exited(code),
            TaskEnd::Signaled(signal) => Self::Signaled(signal),
            TaskEnd::Hung { quiet } => Self::Hung { quiet },
            TaskEnd::Error(error) => Self::Error(error),
            // A way of ending this version does not know yet: the words say it.
            other => Self::Error(other.to_string()),
        }
    }
}

/// A reported end in the launcher's words, for its rules ([`failure_policy::Signature`],
/// [`TaskEnd::is_planned`]).
impl From<&TaskStatus> for TaskEnd {
    fn from(status: &TaskStatus) -> Self {
        match status {
            TaskStatus::Exited(code) => Self::Exited(*code),
            TaskStatus::Signaled(signal) => Self::Signaled(*signal),
            TaskStatus::Hung { quiet } => Self::Hung { quiet: *quiet },
            TaskStatus::Error(error) => Self::Error(error.clone()),
        }
    }
}

/// What the rendezvous answers a task's report
/// ([`RendezvousClient::report_exit`](crate::RendezvousClient::report_exit)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportAnswer {
    /// Whether the report changed the job (one for a round that already ended does not).
    pub counted: bool,
    /// What it did, or why it did not count.
    pub note: String,
    /// What the reporting node restarts in place: the task alone ([`Restart::Task`]), or
    /// with the chief it also runs ([`Restart::WithChief`]); `None`: nothing (the round
    /// ended, or it was a success).
    pub in_place: Option<Restart>,
    /// The task's in-place restarts in this round, this one included: its
    /// `TFCLUSTER_RESTART_COUNT` adds them to the round's.
    pub task_restarts: u32,
    /// When this answer restarts the chief (its own failure, or [`Restart::WithChief`]): the
    /// chief's in-place restarts in this round, this one included (its
    /// `TFCLUSTER_RESTART_COUNT` adds them to the round's); an ask to restart it
    /// ([`RoundStatus::RestartChief`]) numbered no higher is carried out by it. Else 0.
    pub chief_restarts: u32,
}

/// A task failure, as the rendezvous keeps the first one of a job: which task, where, how.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Failure {
    /// The round it failed in.
    pub round: u64,
    /// The node that ran it.
    pub node_id: String,
    /// That node's host.
    pub host: String,
    /// That node's name, if it gave one.
    pub name: String,
    /// Its index among the node's tasks.
    pub local_task: u32,
    /// Its job in the round's cluster.
    pub job: String,
    /// Its index in that job.
    pub index: u32,
    /// How it ended.
    pub status: TaskStatus,
    /// The end of its standard error.
    pub stderr_tail: String,
}

impl fmt::Display for Failure {
    /// `task worker:3 (local task 1 of node n2 on 10.0.0.2) exited with status 1 in round 4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task {}:{} (local task {} of node {} on {}) {} in round {}",
            self.job, self.index, self.local_task, self.node_id, self.host, self.status, self.round
        )
    }
}

/// Why a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndReason {
    /// A new node asked to join while the round had room for it.
    NodeJoined,
    /// A member left, or joined again while the round ran.
    NodeLeft,
    /// A member was silent for longer than the heartbeat timeout.
    NodeLost,
    /// A task failed.
    TaskFailed,
    /// A task hung: the launcher's watchdog saw no progress and killed it.
    TaskHung,
    /// The job's first task (chief, else worker 0) succeeded: the job is done.
    JobSucceeded,
    /// A task exited as planned after saving on a preemption notice (status 42 or 143:
    /// TensorFlow's `PreemptionCheckpointHandler`): a restart that is not a failure.
    TaskPlanned,
    /// A member left ahead of its cloud's notice (a spot preemption, maintenance): planned,
    /// not a failure; its host stays out of the job's rounds until the notice's deadline.
    NodeDeparted,
}

impl EndReason {
    /// The reason in a word, as `--format json` writes it: `node_joined`, `node_left`,
    /// `node_lost`, `task_failed`, `task_hung`, `job_succeeded`, `task_planned` or `node_departed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NodeJoined => "node_joined",
            Self::NodeLeft => "node_left",
            Self::NodeLost => "node_lost",
            Self::TaskFailed => "task_failed",
            Self::TaskHung => "task_hung",
            Self::JobSucceeded => "job_succeeded",
            Self::TaskPlanned => "task_planned",
            Self::NodeDeparted => "node_departed",
        }
    }

    /// Whether this end counts against the job's restarts: a failure or a lost node does; a
    /// membership change someone chose (a node joining or leaving) does not.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::NodeLost | Self::TaskFailed | Self::TaskHung)
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NodeJoined => "a node joined",
            Self::NodeLeft => "a node left",
            Self::NodeLost => "a node was lost",
            Self::TaskFailed => "a task failed",
            Self::TaskHung => "a task hung",
            Self::JobSucceeded => "the job succeeded",
            Self::TaskPlanned => "a task exited as planned (preempted, after saving)",
            Self::NodeDeparted => "a node left ahead of its cloud's notice",
        })
    }
}

/// The end of a round, as every member learns it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RoundEnd {
    /// The round that ended.
    pub round: u64,
    /// Why.
    pub reason: EndReason,
    /// What happened, naming the node or task.
    pub detail: String,
    /// The job's restart count after this end (what the next round's tasks see).
    pub restart_count: u32,
}

impl fmt::Display for RoundEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "round {} ended: {}", self.round, self.detail)
    }
}

/// The end of a job: its first task succeeded, or failures passed `max_restarts`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct JobDone {
    /// Whether it succeeded.
    pub succeeded: bool,
    /// What ended it.
    pub detail: String,
    /// The job's first task failure, if any: the story of a failed job.
    pub first_failure: Option<Failure>,
    /// The round it ended in.
    pub round: u64,
}

impl fmt::Display for JobDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outcome = if self.succeeded {
            "succeeded"
        } else {
            "failed"
        };
        write!(
            f,
            "the job {outcome} in round {}: {}",
            self.round, self.detail
        )?;
        match &self.first_failure {
            Some(first) if !self.succeeded => write!(f, "; first failure: {first}"),
            _ => Ok(()),
        }
    }
}

/// A running round's state, as a heartbeat learns it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RoundStatus {
    /// The round still runs.
    Running,
    /// The round still runs, and the job asks the node that runs the chief to restart it in
    /// place: a parameter server on another node failed and restarted there (its variables
    /// are gone; the chief restores them from its checkpoint). The number is the chief's
    /// in-place restart in this round that the ask makes (a restart of its own counts
    /// too); a node whose chief restarted that many times already has carried it out.
    RestartChief(u32),
    /// The round still runs, and, to the node that runs the chief of a
    /// ParameterServerStrategy round, the most urgent departure notice standing for another
    /// member that runs a parameter server (`None`: none any more): the chief saves before
    /// that host goes. `notices` counts the job's notice changes, as the rendezvous numbers
    /// them.
    ServerNotice {
        /// The job's count of notice changes this answer saw.
        notices: u32,
        /// The notice, `None` once none stands.
        notice: Option<crate::HostNotice>,
    },
    /// The round ended; the node joins again for the next one.
    Ended(RoundEnd),
    /// The job is done; nothing more will run.
    JobDone(JobDone),
}
