//! A job's node as the registry keeps it: where it is, when it was last heard from, and
//! whether it waits, runs in a round or idles.

use std::sync::Arc;
use std::time::Instant;

use super::formed::FormedRound;
use crate::rendezvous::credentials::Digest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeState {
    /// Waiting for the next round, since then.
    Waiting(Instant),
    /// A member of the running round.
    Member,
    /// Its round ended and it has not joined again.
    Idle,
}

#[derive(Debug)]
pub(super) struct Node {
    /// Order of the node's first join in the job: the order of members in a round.
    pub(super) seq: u64,
    pub(super) host: String,
    pub(super) ports: Vec<u16>,
    pub(super) name: String,
    pub(super) last_seen: Instant,
    pub(super) state: NodeState,
    /// The latest round the node was a member of.
    pub(super) last_round: Option<Arc<FormedRound>>,
    /// The hash of the node's secret, set by its first join: each of its calls must carry
    /// it (none: a node of an older record, open).
    pub(super) secret: Option<Digest>,
}

impl Node {
    pub(super) fn describe(&self, id: &str) -> String {
        if self.name.is_empty() {
            format!("node {id} on {}", self.host)
        } else {
            format!("node {id} ({}) on {}", self.name, self.host)
        }
    }
}
