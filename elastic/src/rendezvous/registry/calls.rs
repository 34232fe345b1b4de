//! What the registry's calls take and answer beyond the rendezvous's own call types
//! ([`crate::rendezvous::calls`]): its settings, what a wait finds (the round as formed), and
//! why a call is refused.

use std::sync::Arc;
use std::time::Duration;

use cluster_spec::__private::quote::quote;

use super::formed::FormedRound;
use crate::error::duration;
use crate::outcome::{JobDone, TaskStatus};
pub(crate) use crate::rendezvous::calls::{JoinArgs, Joined, Pending, Reported};

/// The timings and limits of a registry.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How long a round with at least `min` nodes waits for another before it closes.
    pub(crate) last_call: Duration,
    /// How long a node may be silent before it is gone.
    pub(crate) timeout: Duration,
    /// How many jobs one rendezvous serves at once.
    pub(crate) max_jobs: usize,
    /// The rendezvous's own token: every call must carry it (none: each job decides). Kept
    /// whole, as the server's options hold it: a call's hash is keyed by its job, so the
    /// token is hashed with each call's job to compare.
    pub(crate) token: Option<crate::Token>,
    /// What the rendezvous counts: jobs and rounds formed (metrics no registry holds, by
    /// default).
    pub(crate) metrics: crate::RendezvousMetrics,
}

/// Why the rules refuse a call; a [`CallError::Refused`](crate::rendezvous::CallError::Refused), whose gRPC code is the kind's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The request itself is invalid (`INVALID_ARGUMENT`).
    #[error("{0}")]
    InvalidArgument(String),
    /// The job cannot take the request in its state (`FAILED_PRECONDITION`).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The job or node is unknown (`NOT_FOUND`).
    #[error("{0}")]
    NotFound(String),
    /// Another node holds the address (`ALREADY_EXISTS`).
    #[error("{0}")]
    AlreadyExists(String),
    /// A limit of the rendezvous is reached (`RESOURCE_EXHAUSTED`).
    #[error("{0}")]
    ResourceExhausted(String),
    /// The call lacks the token of the rendezvous or the job (`UNAUTHENTICATED`).
    #[error("{0}")]
    Unauthenticated(String),
    /// The call names a node whose secret it lacks (`PERMISSION_DENIED`).
    #[error("{0}")]
    PermissionDenied(String),
}

/// How a local task of a node's round ended: what a report tells the rules.
#[derive(Debug, Clone)]
pub(crate) struct TaskReport {
    pub(crate) round: u64,
    pub(crate) local_task: u32,
    pub(crate) status: TaskStatus,
    pub(crate) stderr_tail: String,
    /// Whether the task made progress before it ended (the crash-loop rule's question).
    pub(crate) progressed: bool,
}

/// What a wait finds.
#[derive(Debug, Clone)]
pub(crate) enum Waited {
    /// A round holding the node, newer than the one it last saw.
    Round { round: Arc<FormedRound>, rank: u32 },
    /// No such round yet.
    Pending(Pending),
    /// The job is done.
    Done(JobDone),
}

/// The refusal of a call naming a node the job does not have.
pub(super) fn unknown_node(rdzv_id: &str, node_id: &str, timeout: Duration) -> Refusal {
    Refusal::NotFound(format!(
        "node {} is not in job {}: it left, or was silent for more than {}; join again",
        quote(node_id, 0),
        quote(rdzv_id, 0),
        duration(timeout)
    ))
}

/// The refusal of an observer's call (a watch, a status) on a job this rendezvous does not
/// hold.
pub(super) fn unknown_job(rdzv_id: &str) -> Refusal {
    Refusal::NotFound(format!(
        "no job with rendezvous id {} here: no node has joined it yet, or every node left and \
         it was forgotten",
        quote(rdzv_id, 0)
    ))
}
