//! [`Round`]: a round as an agent holds it: a [`WatchedRound`] checked to be of the node's
//! config and to hold the node at its rank, with the node's tasks.

use cluster_spec::ClusterSpec;

use super::Node;
use crate::assignment::{Member, TaskAssignment};
use crate::resolver::RendezvousClusterResolver;
use crate::watched_round::WatchedRound;
use crate::{Error, JobConfig};

/// A round that holds this node: its number, the job's restart count, the members in rank
/// order, this node's rank and its tasks, and the round's cluster.
#[derive(Debug, Clone)]
pub struct Round {
    round: WatchedRound,
    rank: u32,
    node_id: String,
}

impl Round {
    /// `round`, found by a wait of `node` at the rendezvous at `addr` with the node at
    /// `rank`: checked to be of the node's config and to hold the node at that rank.
    pub(super) fn new(
        round: WatchedRound,
        rank: u32,
        node: &Node,
        addr: &str,
    ) -> Result<Self, Error> {
        let bad = |what: String| Error::InvalidResponse {
            addr: addr.to_owned(),
            call: "WaitRound",
            what: Some(what),
            source: None,
        };
        if round.config() != &node.join.config {
            return Err(bad(format!(
                "round {} is of another config: {}",
                round.number(),
                node.join.config.differences(round.config()).join(", ")
            )));
        }
        if round
            .members()
            .get(rank as usize)
            .map(|m| m.node_id.as_str())
            != Some(node.node_id())
        {
            return Err(bad(format!(
                "rank {rank} of round {} is not node {}",
                round.number(),
                node.node_id()
            )));
        }
        Ok(Self {
            round,
            rank,
            node_id: node.node_id().to_owned(),
        })
    }

    /// The round's number in the job, from 1.
    pub fn number(&self) -> u64 {
        self.round.number()
    }

    /// The job's restart count: how many rounds a failure ended before this one. The same
    /// for every task of the round (`TORCHELASTIC_RESTART_COUNT`'s role).
    pub fn restart_count(&self) -> u32 {
        self.round.restart_count()
    }

    /// This node's rank: its place among the members.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The job's config.
    pub fn config(&self) -> &JobConfig {
        self.round.config()
    }

    /// The members, in rank order.
    pub fn members(&self) -> &[Member] {
        self.round.members()
    }

    /// The round's cluster.
    pub fn cluster_spec(&self) -> &ClusterSpec {
        self.round.cluster_spec()
    }

    /// The round as an observer sees it (no rank, no local tasks).
    pub fn watched(&self) -> &WatchedRound {
        &self.round
    }

    /// This node's tasks, in local order: local task `i` serves on the node's `i`-th port.
    pub fn local_tasks(&self) -> &[TaskAssignment] {
        self.round.assignment().node_tasks(self.rank)
    }

    /// The `TF_CONFIG` for local task `local_task` (RPC layer `grpc`).
    pub fn tf_config(&self, local_task: u32) -> Result<String, Error> {
        let task = self.local_task(local_task)?;
        Ok(cluster_resolver::tf_config_for(
            self.cluster_spec(),
            &task.task.job,
            task.task.task,
            Some("grpc"),
        )?)
    }

    /// A [`ClusterResolver`](cluster_resolver::ClusterResolver) for local task `local_task`
    /// of this round.
    pub fn resolver(&self, local_task: u32) -> Result<RendezvousClusterResolver, Error> {
        let task = self.local_task(local_task)?;
        Ok(RendezvousClusterResolver::new(
            self.cluster_spec().clone(),
            task.task.job.clone(),
            task.task.task,
        ))
    }

    fn local_task(&self, local_task: u32) -> Result<&TaskAssignment, Error> {
        self.local_tasks()
            .get(local_task as usize)
            .ok_or(Error::NoSuchLocalTask {
                local_task,
                tasks: self.config().tasks_per_node(),
            })
    }
}
