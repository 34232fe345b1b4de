//! [`Local`]: the rendezvous's calls run in this process, the same on every [`Store`]: each
//! call run on the registry holding its job and answered; wait, observe, heartbeat and an
//! operator's status as long polls. Each call runs in a span `rendezvous` with the call's name (as on the wire),
//! its `rdzv_id` and its `node`, so the registry's events say whose call they come from.
//!
//! Here, at the edge of the rules, what a call carries becomes what it proves: the token
//! and the secret are hashed ([`Proof`]), and each call is authorized on the registry
//! holding its job before it runs. A new node that brings no secret is given one here, so
//! that on the etcd store the secret never leaves the joining agent's process.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tracing::{Instrument, Span};

use super::caller::Caller;
use super::registry::{MAX_ID_LEN, Refusal, TaskReport, Waited};
use super::{
    Beat, CallError, Credentials, Found, JoinArgs, Joined, Leave, ListQuery, NodeSecret, Observe,
    Proof, Rendezvous, Report, Reported, StatusQuery, Store, Wait,
};
use crate::job_status::{JobStatus, JobSummary};
use crate::outcome::RoundStatus;

/// How long a wait that asks for news of its pending round is held before that news is
/// answered (a round is answered at once): the first news of a wait comes after this, later
/// news as it happens.
const PROGRESS_HOLD: Duration = Duration::from_secs(1);

/// The rendezvous over the jobs of `store`.
#[derive(Debug)]
pub(crate) struct Local<S> {
    store: S,
}

impl<S: Store> Local<S> {
    pub(crate) fn new(store: S) -> Self {
        Self { store }
    }

    /// A long poll's deadline: `poll` from now, at most the store's cap.
    fn deadline(&self, poll: Duration) -> Instant {
        Instant::now() + poll.min(self.store.poll_cap())
    }

    /// `wait`'s long poll until `deadline`, answered by a round, the job's end, or a pending
    /// round unlike `seen` (when given).
    async fn wait_until(
        &self,
        wait: &Wait,
        deadline: Instant,
        seen: Option<(u64, u32)>,
    ) -> Result<Found, CallError> {
        let proof = proof_of(&wait.credentials, &wait.rdzv_id, Some(&wait.node_id))?;
        self.store
            .long_poll(
                &wait.rdzv_id,
                Some(&wait.node_id),
                deadline,
                |registry, now| {
                    registry.authorize(&wait.rdzv_id, Some(&wait.node_id), "WaitRound", &proof)?;
                    registry
                        .wait(&wait.rdzv_id, &wait.node_id, wait.after_round, now)
                        .map(|waited| until_a_round(waited, seen))
                },
            )
            .await
    }

    /// Joins `join`'s node, its host (when it names none) the store's default for a call
    /// from `peer`.
    pub(crate) async fn join_from(
        &self,
        mut join: JoinArgs,
        peer: Option<SocketAddr>,
    ) -> Result<Joined, CallError> {
        let span = call_span("Join", &join.rdzv_id, join.node_id.as_deref());
        async {
            join.peer = peer.map(|a| Caller::of(a.ip()));
            // A node bringing no secret (a new one, from a client that draws none) gets one;
            // a known node bringing none is refused by the rules, as a wrong one is.
            let drawn = match join.credentials.secret {
                Some(_) => None,
                None => Some(NodeSecret::generate()),
            };
            if let Some(secret) = &drawn {
                join.credentials.secret = Some(secret.clone());
            }
            let proof = proof_of(&join.credentials, &join.rdzv_id, join.node_id.as_deref())?;
            if join.host.is_empty() {
                join.host = self.store.default_host(peer).ok_or_else(|| {
                    CallError::from(Refusal::InvalidArgument(
                        "no host given, and the caller's address is unknown".to_owned(),
                    ))
                })?;
            }
            let mut joined = self.store.join(join, proof).await?;
            joined.secret = drawn;
            Ok(joined)
        }
        .instrument(span)
        .await
    }
}

/// What `credentials` prove for job `rdzv_id`, once its ids are no longer than any job's or
/// node's may be: a stranger's id of kilobytes is refused before anything is hashed with it
/// or looked up (each call's hashes are keyed by its id, some under the registry's lock).
fn proof_of(
    credentials: &Credentials,
    rdzv_id: &str,
    node_id: Option<&str>,
) -> Result<Proof, CallError> {
    for (what, id) in [("rendezvous id", Some(rdzv_id)), ("node id", node_id)] {
        let len = id.map_or(0, str::len);
        if len > MAX_ID_LEN {
            return Err(Refusal::InvalidArgument(format!(
                "the {what} is {len} bytes long, more than any may be ({MAX_ID_LEN})"
            ))
            .into());
        }
    }
    Ok(credentials.proof(rdzv_id))
}

/// The span of `call` to job `rdzv_id`, by `node` when a node makes it.
fn call_span(call: &'static str, rdzv_id: &str, node: Option<&str>) -> Span {
    let span = tracing::info_span!("rendezvous", call, rdzv_id, node = tracing::field::Empty);
    if let Some(node) = node {
        span.record("node", node);
    }
    span
}

/// A registry's wait answer as the call's, and whether the caller would rather wait on (no
/// round yet, and, when it says what it `seen` of the pending round, nothing new of it).
fn until_a_round(waited: Waited, seen: Option<(u64, u32)>) -> (Found, bool) {
    match waited {
        Waited::Pending(p) => {
            let new = seen.is_some_and(|seen| seen != (p.round, p.waiting));
            (Found::Pending(p), !new)
        }
        Waited::Done(done) => (Found::Done(done), false),
        Waited::Round { round, rank } => (
            Found::Round {
                round: round.round.clone(),
                rank,
            },
            false,
        ),
    }
}

impl<S: Store> Rendezvous for Local<S> {
    type Error = CallError;

    async fn join(&self, join: JoinArgs, _within: Duration) -> Result<Joined, CallError> {
        self.join_from(join, None).await
    }

    async fn wait(&self, wait: Wait, _within: Duration) -> Result<Found, CallError> {
        let span = call_span("WaitRound", &wait.rdzv_id, Some(&wait.node_id));
        async {
            let deadline = self.deadline(wait.poll);
            let Some(seen) = wait.seen else {
                return self.wait_until(&wait, deadline, None).await;
            };
            // Held for a while before news of the pending round is answered, so that news
            // never comes back at once (the client paces quick answers, which would delay the
            // round that follows) and a burst of joins is one answer; a round answers at once.
            let hold = deadline.min(Instant::now() + PROGRESS_HOLD);
            let found = self.wait_until(&wait, hold, None).await?;
            match &found {
                Found::Pending(p) if hold < deadline && seen == (p.round, p.waiting) => {
                    self.wait_until(&wait, deadline, Some(seen)).await
                }
                _ => Ok(found),
            }
        }
        .instrument(span)
        .await
    }

    async fn observe(&self, observe: Observe, _within: Duration) -> Result<Found, CallError> {
        let span = call_span("WatchRounds", &observe.rdzv_id, None);
        let proof = proof_of(&observe.credentials, &observe.rdzv_id, None)?;
        self.store
            .long_poll(
                &observe.rdzv_id,
                None,
                self.deadline(observe.poll),
                |registry, now| {
                    registry.authorize(&observe.rdzv_id, None, "WatchRounds", &proof)?;
                    registry
                        .observe(&observe.rdzv_id, observe.job, observe.after_round, now)
                        .map(|waited| until_a_round(waited, None))
                },
            )
            .instrument(span)
            .await
    }

    async fn heartbeat(&self, beat: Beat, _within: Duration) -> Result<RoundStatus, CallError> {
        let span = call_span("Heartbeat", &beat.rdzv_id, Some(&beat.node_id));
        let proof = proof_of(&beat.credentials, &beat.rdzv_id, Some(&beat.node_id))?;
        let arrived = Instant::now();
        self.store
            .long_poll(
                &beat.rdzv_id,
                Some(&beat.node_id),
                self.deadline(beat.poll),
                |registry, now| {
                    registry.authorize(&beat.rdzv_id, Some(&beat.node_id), "Heartbeat", &proof)?;
                    let status = registry.heartbeat(
                        &beat.rdzv_id,
                        &beat.node_id,
                        beat.round,
                        (beat.chief_restarts_seen, beat.notices_seen),
                        beat.notice.as_ref().map(|n| (n, arrived)),
                        now,
                    )?;
                    let running = status == RoundStatus::Running;
                    Ok((status, running))
                },
            )
            .instrument(span)
            .await
    }

    async fn report(&self, report: Report, _within: Duration) -> Result<Reported, CallError> {
        let span = call_span("Report", &report.rdzv_id, Some(&report.node_id));
        let proof = proof_of(&report.credentials, &report.rdzv_id, Some(&report.node_id))?;
        self.store
            .long_poll(
                &report.rdzv_id,
                Some(&report.node_id),
                Instant::now(),
                |registry, now| {
                    registry.authorize(&report.rdzv_id, Some(&report.node_id), "Report", &proof)?;
                    let task = TaskReport {
                        round: report.round,
                        local_task: report.local_task,
                        status: report.status.clone(),
                        stderr_tail: report.stderr_tail.clone(),
                        progressed: report.progressed,
                    };
                    let reported = registry.report(&report.rdzv_id, &report.node_id, task, now)?;
                    Ok((reported, false))
                },
            )
            .instrument(span)
            .await
    }

    async fn job_status(
        &self,
        query: StatusQuery,
        _within: Duration,
    ) -> Result<JobStatus, CallError> {
        let span = call_span("JobStatus", &query.rdzv_id, None);
        let proof = proof_of(&query.credentials, &query.rdzv_id, None)?;
        let deadline = match query.after_digest {
            0 => Instant::now(),
            _ => self.deadline(query.poll),
        };
        self.store
            .long_poll(&query.rdzv_id, None, deadline, |registry, now| {
                registry.authorize(&query.rdzv_id, None, "JobStatus", &proof)?;
                let status = registry.status(&query.rdzv_id, now)?;
                let unchanged = status.digest == query.after_digest;
                Ok((status, unchanged))
            })
            .instrument(span)
            .await
    }

    async fn list_jobs(
        &self,
        query: ListQuery,
        _within: Duration,
    ) -> Result<Vec<JobSummary>, CallError> {
        let span = tracing::info_span!("rendezvous", call = "ListJobs");
        self.store
            .list_jobs(&query.credentials)
            .instrument(span)
            .await
    }

    async fn leave(&self, leave: Leave, _within: Duration) -> Result<(), CallError> {
        let span = call_span("Leave", &leave.rdzv_id, Some(&leave.node_id));
        let proof = proof_of(&leave.credentials, &leave.rdzv_id, Some(&leave.node_id))?;
        self.store
            .long_poll(&leave.rdzv_id, None, Instant::now(), |registry, now| {
                registry.authorize(&leave.rdzv_id, Some(&leave.node_id), "Leave", &proof)?;
                registry.leave(&leave.rdzv_id, &leave.node_id, leave.notice.as_ref(), now);
                Ok(((), false))
            })
            .instrument(span)
            .await
    }
}
