//! A round once formed (fixed for its whole life), and what the round a node waits for
//! still waits for.

use std::collections::HashMap;

use crate::round::{Assignment, Member, RoundError, assign};
use crate::{JobConfig, proto, wire};

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
    /// Round `number` of job incarnation `job` with `members` in rank order, its tasks
    /// assigned by the job's rule.
    pub(super) fn new(
        job: u64,
        number: u64,
        restart_count: u32,
        config: JobConfig,
        members: Vec<Member>,
    ) -> Result<Self, RoundError> {
        let assignment = assign(&config, &members)?;
        let cluster_json = assignment.cluster_spec().to_json();
        let ranks = members
            .iter()
            .enumerate()
            .map(|(r, m)| (m.node_id.clone(), r as u32))
            .collect();
        Ok(Self {
            job,
            number,
            restart_count,
            config,
            members,
            assignment,
            cluster_json,
            ranks,
        })
    }

    /// The round on the wire, `rank` the asking node's.
    pub(crate) fn to_proto(&self, rank: u32) -> proto::Round {
        proto::Round {
            number: self.number,
            restart_count: self.restart_count,
            members: self.members.iter().map(wire::member_to_proto).collect(),
            rank,
            cluster_json: self.cluster_json.clone(),
            config: Some(wire::config_to_proto(&self.config)),
            job: self.job,
        }
    }

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
