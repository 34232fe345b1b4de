//! [`JobStatus`] and [`JobSummary`]: a job as an operator sees it (`tfcluster status`): its
//! phase, the running round and its members, every node and whether it is late, the
//! restarts against the job's limit, the latest failure; and the one-line form a list of
//! jobs shows. The rendezvous builds them (either store); [`JobStatus::digest`] lets a
//! watcher wait for the next change.

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use crate::JobConfig;
use crate::host_notice::HostNotice;
use crate::outcome::{Failure, JobDone, RoundEnd};
use crate::watched_round::WatchedRound;

/// The most jobs one [`list_jobs`](crate::RendezvousClient::list_jobs) answer holds.
pub const MAX_LISTED: usize = 1000;

/// A job's state at its rendezvous, from [`job_status`](crate::RendezvousClient::job_status).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobStatus {
    /// The job's rendezvous id.
    pub rdzv_id: String,
    /// The job's incarnation ([`WatchedRound::job`]).
    pub job: u64,
    /// What its nodes agreed on: node range, tasks per node, layout, `max_restarts`.
    pub config: JobConfig,
    /// Forming, running a round, or done.
    pub phase: JobPhase,
    /// Rounds formed so far.
    pub rounds_formed: u64,
    /// Rounds a failure ended so far (against [`JobConfig::max_restarts`]).
    pub restart_count: u32,
    /// Every node the job holds, in the order they first joined.
    pub nodes: Vec<NodeStatus>,
    /// The job's latest task failure.
    pub last_failure: Option<Failure>,
    /// The latest round end.
    pub last_end: Option<RoundEnd>,
    /// The running round's tasks restarted in place, in the order first restarted.
    pub task_restarts: Vec<TaskRestarts>,
    /// Hosts set aside now ([`BadHostPolicy`](crate::BadHostPolicy)): left out of the next
    /// rounds until their cooldown ends.
    pub hosts_aside: Vec<HostAside>,
    /// Rounds ended by hosts joining or leaving, against the job's budget for them.
    pub churn: MembershipChurn,
    /// How long a node may be silent before it is lost.
    pub heartbeat_timeout: Duration,
    /// A hash of the status but the times that pass by themselves (how long a node has
    /// waited or been silent): it changes when the job does, or when a node turns late.
    /// Given back to [`job_status`](crate::RendezvousClient::job_status), it makes the call
    /// wait for the next change.
    pub digest: u64,
}

/// A task restarted in place in the running round (TensorFlow's failure domains: a
/// ParameterServerStrategy worker, the chief, a parameter server with the chief, an
/// evaluator).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TaskRestarts {
    /// Its job, e.g. `worker`.
    pub job: String,
    /// Its index in that job.
    pub index: u32,
    /// Its in-place restarts in the round, planned ones included.
    pub restarts: u32,
    /// Those counted against the job's `max_task_restarts` (planned exits are not).
    pub failures: u32,
    /// The failure (or planned exit) that last restarted it.
    pub last_failure: Failure,
}

/// Rounds a job's membership ended (a host joining or leaving: no failure, so counted against
/// no restarts), against the job's budget for them ([`budget`](Self::budget) at once, then
/// one more each [`refill`](Self::refill)): past it, a joining host waits instead of ending
/// the running round, so join and leave in a loop cannot restart a job forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct MembershipChurn {
    /// Such ends the budget still counts.
    pub ends: u32,
    /// How many it allows at once.
    pub budget: u32,
    /// How long it takes to grow back by one.
    pub refill: Duration,
    /// How long a joining host waits before its join may end a round (`None`: it may now).
    pub wait: Option<Duration>,
}

/// A host set aside: its tasks failed too often while other hosts' did not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HostAside {
    /// The host (the address its tasks are reached at).
    pub host: String,
    /// How long until it may be in a round again.
    pub remaining: Duration,
    /// How many times it was set aside, this time included.
    pub times: u32,
    /// Why: its failures, and the last of them.
    pub reason: String,
}

/// Where a job is.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum JobPhase {
    /// No round runs: the next one forms.
    Forming {
        /// The round that forms.
        round: u64,
        /// Nodes waiting for it.
        waiting: u32,
        /// What it waits for, e.g. `round 2 waits for nodes: 1 of min 2 (max 4) have joined`.
        detail: String,
    },
    /// A round runs.
    Running(WatchedRound),
    /// The job is done.
    Done(JobDone),
}

/// A node of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeStatus {
    /// Its id in the job.
    pub node_id: String,
    /// The host its tasks are reached at.
    pub host: String,
    /// Its name (the agent's host name), possibly empty.
    pub name: String,
    /// One port per local task.
    pub ports: Vec<u16>,
    /// Waiting, a member of the running round, or idle.
    pub state: NodeState,
    /// How long since the rendezvous last heard from it. The etcd backend keeps no time of
    /// calls: zero while the node's liveness key lives, else the heartbeat timeout.
    pub silent: Duration,
    /// Silent past half the heartbeat timeout (an agent calls at least every third of it):
    /// about to be lost.
    pub late: bool,
    /// The cloud's notice standing for its host, as its heartbeats last said.
    pub notice: Option<HostNotice>,
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeState {
    /// Waiting for the next round, for this long.
    Waiting(Duration),
    /// A member of the running round, of this rank.
    Member {
        /// Its rank in the round.
        rank: u32,
    },
    /// Its round ended and it has not joined again.
    Idle,
}

/// A job in a list of a rendezvous's jobs, from
/// [`list_jobs`](crate::RendezvousClient::list_jobs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobSummary {
    /// The job's rendezvous id.
    pub rdzv_id: String,
    /// Forming, running, succeeded or failed.
    pub state: JobState,
    /// The running round, else the latest formed (0: none yet).
    pub round: u64,
    /// Nodes the job holds.
    pub nodes: u32,
    /// Rounds a failure ended so far.
    pub restart_count: u32,
    /// The job's limit of them.
    pub max_restarts: u32,
}

/// A job's phase in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JobState {
    /// The next round forms.
    Forming,
    /// A round runs.
    Running,
    /// Its first task succeeded.
    Succeeded,
    /// Failures passed its restarts.
    Failed,
}

impl JobState {
    /// The state as the wire and `--format json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forming => "forming",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }

    /// The state written as [`as_str`](Self::as_str) writes it.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [Self::Forming, Self::Running, Self::Succeeded, Self::Failed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl JobPhase {
    /// The phase in a word.
    pub fn state(&self) -> JobState {
        match self {
            Self::Forming { .. } => JobState::Forming,
            Self::Running(_) => JobState::Running,
            Self::Done(done) if done.succeeded => JobState::Succeeded,
            Self::Done(_) => JobState::Failed,
        }
    }
}

impl JobStatus {
    /// The status's [`digest`](Self::digest), computed from the rest.
    pub(crate) fn compute_digest(&self) -> u64 {
        // Fixed keys: the server computes it, the client only gives it back.
        let mut h = DefaultHasher::new();
        (
            &self.rdzv_id,
            self.job,
            self.rounds_formed,
            self.restart_count,
        )
            .hash(&mut h);
        match &self.phase {
            // Not the detail: it counts down the last call by itself.
            JobPhase::Forming { round, waiting, .. } => (0u8, round, waiting).hash(&mut h),
            JobPhase::Running(r) => (1u8, r.number()).hash(&mut h),
            JobPhase::Done(done) => (2u8, done).hash(&mut h),
        }
        for node in &self.nodes {
            let state = match node.state {
                NodeState::Waiting(_) => NodeState::Waiting(Duration::ZERO),
                other => other,
            };
            (
                &node.node_id,
                &node.host,
                &node.name,
                &node.ports,
                state,
                node.late,
                // Not the time left: it counts down by itself.
                node.notice.as_ref().map(|n| (&n.cloud, &n.kind, &n.detail)),
            )
                .hash(&mut h);
        }
        (&self.last_failure, &self.last_end, &self.task_restarts).hash(&mut h);
        // Not the time left: it counts down by itself.
        for aside in &self.hosts_aside {
            (&aside.host, aside.times, &aside.reason).hash(&mut h);
        }
        // Not the wait: it counts down by itself.
        (self.churn.ends, self.churn.budget).hash(&mut h);
        // Never 0, which asks for an answer at once.
        h.finish().max(1)
    }
}
