//! A round once formed (fixed for its whole life), and what the round a node waits for
//! still waits for.

use std::collections::HashMap;

use crate::JobConfig;
use crate::round::{Assignment, Member};

/// A round as it formed: fixed for its whole life.
#[derive(Debug)]
pub(crate) struct FormedRound {
    /// The job's incarnation: another job under the same rendezvous id has another.
    pub(crate) job: u64,
    pub(crate) number: u64,
    pub(crate) restart_count: u32,
    pub(crate) config: JobConfig,
    pub(crate) members: Vec<Member>,
    pub(crate) assignment: Assignment,
    pub(crate) cluster_json: String,
    /// Each member's rank, by node id.
    pub(super) ranks: HashMap<String, u32>,
}

impl FormedRound {
    pub(super) fn rank(&self, node_id: &str) -> Option<u32> {
        self.ranks.get(node_id).copied()
    }
}

/// What the round a node waits for still waits for.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) round: u64,
    pub(crate) waiting: u32,
    pub(crate) detail: String,
}
