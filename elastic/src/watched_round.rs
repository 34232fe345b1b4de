//! [`WatchedRound`]: a round of a job as anyone sees it — its number, restart count, members
//! and the cluster they make — whether a member or an observer holds it.

use std::sync::Arc;

use cluster_spec::ClusterSpec;

use crate::JobConfig;
use crate::assignment::{Assignment, Member, RoundError, TaskAssignment, assign};

/// A round of a job: its number, the job's restart count, the members in rank order, and the
/// round's cluster, derived from the members by the crate's one assignment rule (from a rendezvous over gRPC,
/// checked against the cluster it sent).
///
/// What an observer gets from [`watch_round`](crate::RendezvousClient::watch_round); a
/// member's [`Round`](crate::Round) adds its rank and tasks.
#[derive(Debug, Clone)]
pub struct WatchedRound {
    job: u64,
    number: u64,
    restart_count: u32,
    config: JobConfig,
    // Shared: the rendezvous hands the same round to each member that waits for it.
    members: Arc<[Member]>,
    assignment: Arc<Assignment>,
    /// The cluster as JSON, as the rendezvous sends it (computed once per round).
    cluster_json: Arc<str>,
}

impl WatchedRound {
    /// Round `number` of job incarnation `job` with `members` in rank order, its tasks
    /// assigned by the job's rule.
    pub(crate) fn new(
        job: u64,
        number: u64,
        restart_count: u32,
        config: JobConfig,
        members: Vec<Member>,
    ) -> Result<Self, RoundError> {
        let assignment = assign(&config, &members)?;
        let cluster_json = assignment.cluster_spec().to_json().into();
        Ok(Self {
            job,
            number,
            restart_count,
            config,
            members: members.into(),
            assignment: Arc::new(assignment),
            cluster_json,
        })
    }

    /// The round's number in the job, from 1.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The job's incarnation at the rendezvous: another job under the same rendezvous id (a
    /// restarted rendezvous, an id reused after its job ended) has another.
    pub fn job(&self) -> u64 {
        self.job
    }

    /// The job's restart count: how many rounds a failure ended before this one. The same
    /// for every task of the round (`TORCHELASTIC_RESTART_COUNT`'s role).
    pub fn restart_count(&self) -> u32 {
        self.restart_count
    }

    /// The job's config.
    pub fn config(&self) -> &JobConfig {
        &self.config
    }

    /// The members, in rank order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The round's cluster.
    pub fn cluster_spec(&self) -> &ClusterSpec {
        self.assignment.cluster_spec()
    }

    /// Every task of the round, in task order (node by node).
    pub fn tasks(&self) -> &[TaskAssignment] {
        self.assignment.tasks()
    }

    /// The round's cluster and tasks.
    pub(crate) fn assignment(&self) -> &Assignment {
        &self.assignment
    }

    /// The cluster as JSON, as the rendezvous sends it.
    pub(crate) fn cluster_json(&self) -> &Arc<str> {
        &self.cluster_json
    }
}
