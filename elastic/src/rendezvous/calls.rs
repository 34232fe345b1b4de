//! What the [`Rendezvous`](super::Rendezvous) calls take and answer, in the crate's own
//! types: a join and its answer, a wait's and an observer's request and what either finds, a
//! heartbeat, a report and its answer, a leave, an operator's status and list queries; each
//! with the [`Credentials`] it carries.

use std::time::Duration;

use failure_policy::Restart;

use super::credentials::{Credentials, NodeSecret};
use crate::JobConfig;
use crate::host_notice::HostNotice;
use crate::outcome::{JobDone, TaskStatus};
use crate::watched_round::WatchedRound;

/// A join.
#[derive(Debug, Clone)]
pub(crate) struct JoinArgs {
    pub(crate) rdzv_id: String,
    pub(crate) config: JobConfig,
    /// `None` for a new node without an id of its own.
    pub(crate) node_id: Option<String>,
    /// Where the node's tasks are reached; empty in a request: the rendezvous's default (the
    /// caller's address). The registry gets it defaulted.
    pub(crate) host: String,
    pub(crate) ports: Vec<u16>,
    pub(crate) name: String,
    /// Who the join came from, when the server knows it (the built-in one does; a join run
    /// in this process, etcd's, has none): a caller's share of job slots.
    pub(crate) peer: Option<super::caller::Caller>,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// What a join answers.
#[derive(Debug, Clone)]
pub(crate) struct Joined {
    pub(crate) node_id: String,
    /// The round the node waits for.
    pub(crate) round: u64,
    /// Why it waits for that round.
    pub(crate) note: String,
    /// The host its tasks are advertised at.
    pub(crate) host: String,
    /// How long the node may be silent before it is gone.
    pub(crate) heartbeat_timeout: Duration,
    /// The secret the rendezvous drew for a new node that brought none: only this answer
    /// carries it.
    pub(crate) secret: Option<NodeSecret>,
}

/// A node's long poll for its next round.
#[derive(Debug, Clone)]
pub(crate) struct Wait {
    pub(crate) rdzv_id: String,
    pub(crate) node_id: String,
    /// The last round the node got (0: none).
    pub(crate) after_round: u64,
    /// How long the rendezvous may hold the call (it may cap it lower).
    pub(crate) poll: Duration,
    /// The `(round, waiting)` of the [`Pending`] the node last got in this wait (`(0, 0)` at
    /// its start): a pending round that differs is answered at once. `None`: only a round,
    /// the job's end or the poll's end answer (an older client).
    pub(crate) seen: Option<(u64, u32)>,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// An observer's long poll for a job's running round.
#[derive(Debug, Clone)]
pub(crate) struct Observe {
    pub(crate) rdzv_id: String,
    /// The job incarnation of `after_round` (0: unknown).
    pub(crate) job: u64,
    /// The last round the observer saw (0: none).
    pub(crate) after_round: u64,
    /// How long the rendezvous may hold the call (it may cap it lower).
    pub(crate) poll: Duration,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// What a wait or an observer's poll found.
#[derive(Debug, Clone)]
pub(crate) enum Found {
    /// A round: for a wait, the next round holding the node, with the node's `rank`; for an
    /// observer, the running round (rank 0, meaning nothing).
    Round { round: WatchedRound, rank: u32 },
    /// No such round within the poll: what the next round waits for.
    Pending(Pending),
    /// The job is done.
    Done(JobDone),
}

/// What the round a node waits for still waits for.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) round: u64,
    pub(crate) waiting: u32,
    pub(crate) detail: String,
}

/// A node's heartbeat in `round`.
#[derive(Debug, Clone)]
pub(crate) struct Beat {
    pub(crate) rdzv_id: String,
    pub(crate) node_id: String,
    pub(crate) round: u64,
    /// How long the rendezvous may hold the call while the round runs (0: answer at once).
    pub(crate) poll: Duration,
    /// The highest ask to restart the chief ([`RoundStatus::RestartChief`](crate::RoundStatus))
    /// the node has seen in the round.
    pub(crate) chief_restarts_seen: u32,
    /// The cloud's notice standing for the node's host (`None`: none, or withdrawn).
    pub(crate) notice: Option<HostNotice>,
    /// The job's count of notice changes the node last got
    /// ([`RoundStatus::ServerNotice`](crate::RoundStatus)).
    pub(crate) notices_seen: u32,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// How local task `local_task` of a node's `round` ended.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) rdzv_id: String,
    pub(crate) node_id: String,
    pub(crate) round: u64,
    pub(crate) local_task: u32,
    pub(crate) status: TaskStatus,
    pub(crate) stderr_tail: String,
    /// Whether the task made progress before it ended: the crash-loop rule's question.
    pub(crate) progressed: bool,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// What a report answers.
#[derive(Debug, Clone)]
pub(crate) struct Reported {
    /// Whether the report changed the job (one for a round that already ended does not).
    pub(crate) counted: bool,
    /// What it did, or why it did not count.
    pub(crate) note: String,
    /// What the node restarts in place: `None`, nothing (the round ended, or it was a
    /// success).
    pub(crate) in_place: Option<Restart>,
    /// The task's in-place restarts in this round, this one included.
    pub(crate) task_restarts: u32,
    /// For a chief restarted in place: the round's asks to restart it that this restart
    /// carries out.
    pub(crate) chief_restarts: u32,
}

impl Reported {
    /// A report that restarts nothing in place.
    pub(crate) fn noted(counted: bool, note: impl Into<String>) -> Self {
        Self {
            counted,
            note: note.into(),
            in_place: None,
            task_restarts: 0,
            chief_restarts: 0,
        }
    }
}

/// A node leaving its job.
#[derive(Debug, Clone)]
pub(crate) struct Leave {
    pub(crate) rdzv_id: String,
    pub(crate) node_id: String,
    /// The cloud's notice the node leaves ahead of (`None`: it leaves for another reason).
    pub(crate) notice: Option<HostNotice>,
    /// The job's token and the node's secret, as the call carries them.
    pub(crate) credentials: Credentials,
}

/// An operator's long poll for a job's status.
#[derive(Debug, Clone)]
pub(crate) struct StatusQuery {
    pub(crate) rdzv_id: String,
    /// The digest of the status the caller last got (0: none, answer at once): the answer
    /// is a status of another digest, or the same one when `poll` runs out.
    pub(crate) after_digest: u64,
    /// How long the rendezvous may hold the call (it may cap it lower).
    pub(crate) poll: Duration,
    /// The job's token, as the call carries it.
    pub(crate) credentials: Credentials,
}

/// An operator's question: which jobs are there?
#[derive(Debug, Clone)]
pub(crate) struct ListQuery {
    /// The token the caller holds, as the call carries it: the jobs it opens are listed.
    pub(crate) credentials: Credentials,
}
