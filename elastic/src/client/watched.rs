//! [`WatchedRound`]: a round as anyone sees it, decoded and checked; and [`Watched`], what an
//! observer's long poll ([`watch_round`](super::RendezvousClient::watch_round)) found.

use cluster_spec::ClusterSpec;

use crate::outcome::JobDone;
use crate::proto;
use crate::round::{Assignment, Member, assign};
use crate::wire;
use crate::{Error, JobConfig};

/// A round of a job: its number, the job's restart count, the members in rank order, and the
/// round's cluster, derived here from the members and checked against the rendezvous's.
///
/// What an observer gets from [`watch_round`](super::RendezvousClient::watch_round); a
/// member's [`Round`](super::Round) adds its rank and tasks.
#[derive(Debug, Clone)]
pub struct WatchedRound {
    job: u64,
    number: u64,
    restart_count: u32,
    config: JobConfig,
    members: Vec<Member>,
    assignment: Assignment,
}

impl WatchedRound {
    /// Decodes `round`, the answer to `call` from the rendezvous at `addr`.
    pub(super) fn from_proto(
        round: proto::Round,
        addr: &str,
        call: &'static str,
    ) -> Result<Self, Error> {
        let invalid = |what: String, source: Option<Error>| Error::InvalidResponse {
            addr: addr.to_owned(),
            call,
            what: Some(what),
            source: source.map(Box::new),
        };
        let config = wire::config_from_proto(round.config)
            .map_err(|e| Error::invalid_response(addr, call, e))?;
        let members = round
            .members
            .into_iter()
            .map(wire::member_from_proto)
            .collect::<Result<Vec<_>, Error>>()
            .map_err(|e| Error::invalid_response(addr, call, e))?;
        let assignment = assign(&config, &members).map_err(|e| {
            invalid(
                format!("round {} has members that make no cluster", round.number),
                Some(Error::Round(e)),
            )
        })?;
        // The rendezvous sends its cluster too. An agent of another version computing another
        // cluster would start tasks that cannot find each other, so a difference stops here.
        let theirs = ClusterSpec::from_json(&round.cluster_json).map_err(|e| {
            invalid(
                format!("round {}'s cluster does not parse", round.number),
                Some(Error::Spec(e)),
            )
        })?;
        if &theirs != assignment.cluster_spec() {
            return Err(invalid(
                format!(
                    "round {}'s cluster {theirs} differs from the one its members make, {}",
                    round.number,
                    assignment.cluster_spec()
                ),
                None,
            ));
        }
        Ok(Self {
            job: round.job,
            number: round.number,
            restart_count: round.restart_count,
            config,
            members,
            assignment,
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

    /// Every task of the round.
    pub fn assignment(&self) -> &Assignment {
        &self.assignment
    }
}

/// What [`watch_round`](super::RendezvousClient::watch_round) found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Watched {
    /// The job's running round, later than the one asked after.
    Round(WatchedRound),
    /// No such round within the poll: what the next round waits for.
    Pending {
        /// The round the job waits for.
        round: u64,
        /// How many nodes wait for it.
        waiting: u32,
        /// What it waits for, e.g. `round 2 waits for nodes: 1 of min 2 (max 4) have joined`.
        detail: String,
    },
    /// The job is done; no round will come.
    JobDone(JobDone),
}
