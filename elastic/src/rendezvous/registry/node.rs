//! A job's node as the registry keeps it: where it is, when it was last heard from, and
//! whether it waits, runs in a round or idles.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::formed::FormedRound;
use crate::host_notice::HostNotice;
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
    /// The cloud's notice standing for its host, as its heartbeats last said.
    pub(super) notice: Option<StandingNotice>,
}

/// A node's notice as the registry keeps it: bounded ([`HostNotice::bounded`]), its
/// deadline a time of the registry's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StandingNotice {
    pub(super) cloud: String,
    pub(super) kind: String,
    pub(super) deadline: Option<Instant>,
    pub(super) detail: String,
}

/// How far a notice's deadline may move before the registry takes the new one: each beat
/// restates it from the sender's clock, and rewriting the job for the jitter (the etcd
/// backend writes its record on every change) would be work for nothing.
const DEADLINE_SLACK: Duration = Duration::from_secs(5);

impl StandingNotice {
    /// `notice`, sent at `now`.
    pub(super) fn at(notice: &HostNotice, now: Instant) -> Self {
        let notice = notice.bounded();
        Self {
            cloud: notice.cloud,
            kind: notice.kind,
            deadline: notice.remaining.map(|r| now + r),
            detail: notice.detail,
        }
    }

    /// The notice as of `now`.
    pub(super) fn as_of(&self, now: Instant) -> HostNotice {
        HostNotice {
            cloud: self.cloud.clone(),
            kind: self.kind.clone(),
            // Whole milliseconds, as the wire carries them; at least one while the deadline
            // stands (zero means none).
            remaining: self.deadline.map(|d| {
                let left = d.saturating_duration_since(now).as_millis() as u64;
                Duration::from_millis(left.max(1))
            }),
            detail: self.detail.clone(),
        }
    }

    /// Whether `newer` says something this one does not: another cloud, kind or detail, a
    /// deadline set or dropped, or moved by more than the slack.
    pub(super) fn differs(&self, newer: &Self) -> bool {
        let moved = match (self.deadline, newer.deadline) {
            (Some(a), Some(b)) => a.max(b) - a.min(b) > DEADLINE_SLACK,
            (a, b) => a.is_some() != b.is_some(),
        };
        moved
            || (&self.cloud, &self.kind, &self.detail) != (&newer.cloud, &newer.kind, &newer.detail)
    }
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
