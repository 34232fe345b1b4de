//! A round once formed (fixed for its whole life), and each member's rank in it.

use std::collections::HashMap;

use crate::JobConfig;
use crate::assignment::{Member, RoundError};
use crate::watched_round::WatchedRound;

/// A round as it formed: fixed for its whole life.
#[derive(Debug)]
pub(crate) struct FormedRound {
    pub(crate) number: u64,
    /// The round as every member and observer gets it: its job's incarnation, restart
    /// count, config, members, tasks and cluster.
    pub(crate) round: WatchedRound,
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
        let ranks = members
            .iter()
            .enumerate()
            .map(|(r, m)| (m.node_id.clone(), r as u32))
            .collect();
        let round = WatchedRound::new(job, number, restart_count, config, members)?;
        Ok(Self {
            number,
            round,
            ranks,
        })
    }

    pub(super) fn rank(&self, node_id: &str) -> Option<u32> {
        self.ranks.get(node_id).copied()
    }

    /// Whether member `node_id` runs a task of job `job` (`ps`, `chief`, ...).
    pub(super) fn runs_job(&self, node_id: &str, job: &str) -> bool {
        let Some(rank) = self.rank(node_id) else {
            return false;
        };
        let assignment = self.round.assignment();
        assignment
            .node_tasks(rank)
            .iter()
            .any(|t| t.task.job == job)
    }

    /// The member that runs task `chief:0`, if the round has one.
    pub(super) fn chief_node(&self) -> Option<&str> {
        let assignment = self.round.assignment();
        let chief = assignment.tasks().iter().find(|t| t.task.job == "chief")?;
        self.ranks
            .iter()
            .find(|(_, rank)| assignment.node_tasks(**rank).contains(chief))
            .map(|(node, _)| node.as_str())
    }
}
