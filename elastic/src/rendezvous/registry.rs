//! The rendezvous's state: jobs by rendezvous id, their nodes and rounds, and every
//! transition. Calls and the clock drive it; `now` is passed in, so tests step time instead
//! of sleeping, and no lock is held across an await (the memory store holds it only inside
//! these methods). It knows no wire and no store: [`Local`](super::Local) runs the calls on it
//! over either store.
//!
//! This file is the registry itself: its jobs and the calls. What the calls take and answer
//! is in [`calls`]; the data a job holds below it, [`node`] (a node as kept) and [`formed`]
//! (a round once formed); a job's parts beside it: [`admission`] (which joins are taken),
//! [`membership`] (nodes joining, leaving and going silent), [`job`] (a job's phases: a round
//! running, ending, the job done), [`forming`] (when the next round closes, and with whom),
//! [`task_end`] (what a task's reported end does) and [`status`] (what an operator sees of
//! the jobs); and three rules the parts apply, [`round_size`] (how big a round may grow and still start its tasks), [`host_identity`]
//! (which hosts are one) and [`auth`] (who may make a call). Each file imports only files
//! below it: `formed` ← `node`, `calls` ← `job` ← the parts.

mod admission;
mod auth;
mod bad_hosts;
mod calls;
mod churn;
mod formed;
mod forming;
mod host_identity;
mod job;
mod membership;
mod node;
pub(crate) mod round_size;
// The etcd store's records: they read and build the registry's private state, so they stay
// beside it, compiled with the store.
mod status;
#[cfg(feature = "etcd")]
mod stored;
mod task_end;

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Instant;

use cluster_spec::__private::quote::quote;
use tokio::sync::watch;

use crate::host_notice::HostNotice;
use crate::outcome::RoundStatus;
use crate::rendezvous::credentials::Proof;
pub(crate) use calls::{JoinArgs, Joined, Refusal, Reported, Settings, TaskReport, Waited};
use calls::{unknown_job, unknown_node};
use failure_policy::Strategy;
use job::{Job, Phase};
use node::{NodeState, StandingNotice};

pub(crate) use admission::MAX_ID_LEN;
#[cfg(feature = "etcd")]
pub(crate) use stored::Clock;
pub(crate) use task_end::MAX_STDERR_TAIL;

/// Every job of a rendezvous.
#[derive(Debug)]
pub(crate) struct Registry {
    settings: Settings,
    jobs: HashMap<String, Job>,
    random: RandomState,
}

impl Registry {
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            jobs: HashMap::new(),
            random: RandomState::new(),
        }
    }

    /// A receiver that changes whenever job `rdzv_id` does.
    pub(crate) fn subscribe(&self, rdzv_id: &str) -> Option<watch::Receiver<u64>> {
        self.jobs.get(rdzv_id).map(|j| j.changed.subscribe())
    }

    /// Checks a join's fields on their own, before any job is looked at.
    pub(crate) fn check_join(args: &JoinArgs) -> Result<(), Refusal> {
        admission::check_args(args)
    }

    /// Joins `args`'s node, which proves itself with `proof`: a new job takes its token
    /// (none: an open job), a new node its secret; a known job or node must see the same.
    pub(crate) fn join(
        &mut self,
        args: JoinArgs,
        proof: &Proof,
        now: Instant,
    ) -> Result<Joined, Refusal> {
        Self::check_join(&args)?;
        self.check_server_token(&args.rdzv_id, "Join", proof)?;
        if let Some(job) = self.jobs.get(&args.rdzv_id) {
            job.check_token("Join", proof)?;
        } else {
            if self.jobs.len() >= self.settings.max_jobs {
                return Err(Refusal::ResourceExhausted(format!(
                    "this rendezvous serves {} jobs, its limit; {:?} cannot start",
                    self.jobs.len(),
                    args.rdzv_id
                )));
            }
            // One caller may not take every job slot: its share is a sixteenth of them.
            if let Some(peer) = args.peer {
                let share = self.peer_share();
                let created = self
                    .jobs
                    .values()
                    .filter(|j| j.creator == Some(peer))
                    .count();
                if created >= share {
                    return Err(Refusal::ResourceExhausted(format!(
                        "{peer} created {created} of this rendezvous's jobs, its share of \
                         {share} (a sixteenth of {}); {:?} cannot start until one of them ends",
                        self.settings.max_jobs, args.rdzv_id
                    )));
                }
            }
            // Never 0, which observers send for "unknown".
            let incarnation = self.draw(u64::MAX).max(1);
            self.jobs.insert(
                args.rdzv_id.clone(),
                Job::new(
                    args.rdzv_id.clone(),
                    incarnation,
                    args.config.clone(),
                    proof.token,
                    now,
                )
                .with_creator(args.peer),
            );
            self.settings.metrics.set_jobs(self.jobs.len());
        }
        let node_id = match args.node_id.clone() {
            Some(id) => id,
            None => self.new_node_id(&args.rdzv_id),
        };
        let settings = self.settings.clone();
        let job = self.jobs.get_mut(&args.rdzv_id).expect("inserted above");
        job.check_secret(&node_id, "Join", proof)?;
        job.join(node_id, args, proof.secret, now, &settings)
    }

    pub(crate) fn wait(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        after_round: u64,
        now: Instant,
    ) -> Result<Waited, Refusal> {
        let timeout = self.settings.timeout;
        let last_call = self.settings.last_call;
        let job = self.job(rdzv_id)?;
        let Some(node) = job.nodes.get_mut(node_id) else {
            if let Phase::Done(done) = &job.phase {
                return Ok(Waited::Done(done.clone()));
            }
            return Err(unknown_node(rdzv_id, node_id, timeout));
        };
        node.last_seen = now;
        if let Some(round) = node.last_round.as_ref().filter(|r| r.number > after_round) {
            let rank = round.rank(node_id).unwrap_or_default();
            return Ok(Waited::Round {
                round: Arc::clone(round),
                rank,
            });
        }
        if let Phase::Done(done) = &job.phase {
            return Ok(Waited::Done(done.clone()));
        }
        if !matches!(node.state, NodeState::Waiting(_)) {
            return Err(Refusal::FailedPrecondition(format!(
                "node {node_id} is not waiting for a round after round {after_round}: join \
                 first"
            )));
        }
        Ok(Waited::Pending(job.pending(now, last_call)))
    }

    /// What an observer of job `rdzv_id` learns: the running round when it is later than
    /// round `after_round` of job incarnation `job` (0: unknown), else what the next round
    /// waits for, or the end of the job. A round of another job under this id (another
    /// incarnation, or a number past this job's latest) is no reference: the running round is
    /// news. Its round's rank is 0: the observer is no member. It touches no node, so
    /// observing changes nothing.
    pub(crate) fn observe(
        &self,
        rdzv_id: &str,
        job: u64,
        after_round: u64,
        now: Instant,
    ) -> Result<Waited, Refusal> {
        let found = self.jobs.get(rdzv_id).ok_or_else(|| unknown_job(rdzv_id))?;
        let another_job =
            (job != 0 && job != found.incarnation) || after_round > found.rounds_formed;
        let after_round = if another_job { 0 } else { after_round };
        Ok(match &found.phase {
            Phase::Done(done) => Waited::Done(done.clone()),
            Phase::Running(round) if round.number > after_round => Waited::Round {
                round: Arc::clone(round),
                rank: 0,
            },
            _ => Waited::Pending(found.pending(now, self.settings.last_call)),
        })
    }

    /// A heartbeat of node `node_id` in `round`, which has seen the asks to restart its chief
    /// up to number `chief_restarts_seen`.
    pub(crate) fn heartbeat(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        round: u64,
        (chief_restarts_seen, notices_seen): (u32, u32),
        notice: Option<(&HostNotice, Instant)>,
        now: Instant,
    ) -> Result<RoundStatus, Refusal> {
        let timeout = self.settings.timeout;
        let job = self.job(rdzv_id)?;
        if let Phase::Done(done) = &job.phase {
            return Ok(RoundStatus::JobDone(done.clone()));
        }
        let node = job
            .nodes
            .get_mut(node_id)
            .ok_or_else(|| unknown_node(rdzv_id, node_id, timeout))?;
        node.last_seen = now;
        // Its deadline counts from when the call came, not from `now`: a long poll checks
        // its call again as the job changes, seconds later.
        let notice = notice.map(|(n, sent)| StandingNotice::at(n, sent));
        let changed = match (&node.notice, &notice) {
            (Some(kept), Some(new)) => kept.differs(new),
            (kept, new) => kept.is_some() != new.is_some(),
        };
        if changed {
            match &notice {
                Some(n) => tracing::warn!(rdzv_id, node = %node.describe(node_id),
                    notice = %n.as_of(now), "a cloud's notice for a node's host"),
                None => tracing::info!(rdzv_id, node = %node.describe(node_id),
                    "the cloud's notice for a node's host was withdrawn"),
            }
            node.notice = notice;
            job.notices += 1;
            job.notify();
        }
        let node = &job.nodes[node_id];
        if let Phase::Running(current) = &job.phase
            && current.number == round
        {
            if node.state != NodeState::Member {
                return Err(Refusal::FailedPrecondition(format!(
                    "node {node_id} is not a member of round {round}"
                )));
            }
            if current.chief_node() != Some(node_id) {
                return Ok(RoundStatus::Running);
            }
            let done = chief_restarts_seen.min(job.chief_asks);
            if done > job.chief_asks_done {
                job.chief_asks_done = done;
            }
            if job.chief_asks > chief_restarts_seen {
                return Ok(RoundStatus::RestartChief(job.chief_asks));
            }
            if job.notices > notices_seen && job.config.strategy() == Strategy::ParameterServer {
                let notice = job.server_notice(current, now);
                return Ok(RoundStatus::ServerNotice {
                    notices: job.notices,
                    notice,
                });
            }
            return Ok(RoundStatus::Running);
        }
        job.ended_round(round).map(RoundStatus::Ended)
    }

    pub(crate) fn report(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        report: TaskReport,
        now: Instant,
    ) -> Result<Reported, Refusal> {
        let timeout = self.settings.timeout;
        let job = self.job(rdzv_id)?;
        if let Phase::Done(done) = &job.phase {
            return Ok(Reported::noted(false, format!("not counted: {done}")));
        }
        let node = job
            .nodes
            .get_mut(node_id)
            .ok_or_else(|| unknown_node(rdzv_id, node_id, timeout))?;
        node.last_seen = now;
        let set_aside = |job: &Job| job.hosts.values().map(|h| h.times_aside).sum::<u32>();
        let before = set_aside(job);
        let reported = job.task_ended(node_id, report, now);
        if set_aside(job) > before {
            self.settings.metrics.host_set_aside();
        }
        reported
    }

    pub(crate) fn leave(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        notice: Option<&HostNotice>,
        now: Instant,
    ) {
        if let Some(job) = self.jobs.get_mut(rdzv_id) {
            job.leave(node_id, notice, now);
        }
    }

    /// What the clock does: nodes silent past the timeout are gone (ending their round),
    /// rounds whose last call passed close, jobs without nodes past the timeout are forgotten.
    pub(crate) fn tick(&mut self, now: Instant) {
        let settings = &self.settings;
        for job in self.jobs.values_mut() {
            job.lose_silent(now, settings.timeout);
            job.admit_deferred(now);
            if job.try_close(now, settings) {
                job.notify();
            }
            if job.nodes.is_empty() {
                job.empty_since.get_or_insert(now);
            } else {
                job.empty_since = None;
            }
        }
        self.jobs.retain(|_, job| {
            job.empty_since
                .is_none_or(|since| now.saturating_duration_since(since) <= settings.timeout)
        });
        settings.metrics.set_jobs(self.jobs.len());
    }

    /// How many jobs one caller's address may have created and still hold: a sixteenth of
    /// the job limit, at least one. (Only the built-in server knows a caller's address; on
    /// etcd every agent runs the rules itself and no peer is known, so no share holds.)
    fn peer_share(&self) -> usize {
        (self.settings.max_jobs / 16).max(1)
    }

    fn job(&mut self, rdzv_id: &str) -> Result<&mut Job, Refusal> {
        self.jobs.get_mut(rdzv_id).ok_or_else(|| {
            Refusal::NotFound(format!(
                "no job with rendezvous id {}: join first",
                quote(rdzv_id, 0)
            ))
        })
    }

    fn new_node_id(&self, rdzv_id: &str) -> String {
        let next = self.jobs.get(rdzv_id).map_or(0, |j| j.next_seq);
        format!("n{next}-{:08x}", self.draw(next) as u32)
    }

    /// A number no earlier draw is likely to have: `salt` and the time, hashed with the
    /// registry's random keys.
    fn draw(&self, salt: u64) -> u64 {
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(salt);
        hasher.write_u128(
            std::time::SystemTime::UNIX_EPOCH
                .elapsed()
                .unwrap_or_default()
                .as_nanos(),
        );
        hasher.finish()
    }
}

#[cfg(test)]
mod tests;
