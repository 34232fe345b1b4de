//! A job as the etcd backend keeps it ([`proto::StoredJob`]): loaded into a registry of that
//! one job before a call and stored from it after, so both backends run the same rules on the
//! same state, the same checks of tokens and secrets among them (the record keeps their
//! hashes, never a token or a secret). Liveness is not stored: a node is alive while its lease key is, so a node
//! without one loads as silent past the timeout, and the next tick loses it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use failure_policy::{CrashLoop, LastFailure, Signature};
use tokio::sync::watch;

use super::Registry;
use super::bad_hosts::HostRecord;
use super::calls::Settings;
use super::churn::Churn;
use super::formed::FormedRound;
use super::job::{Job, Phase};
use super::node::{Node, NodeState, StandingNotice};
use crate::proto::{self, stored_node::State};
use crate::rendezvous::credentials;
use crate::{Error, WireError, wire};

/// One moment read from both clocks: stored times are wall-clock milliseconds (every agent
/// reads them), the registry's are `Instant`s. Converting through one anchor makes a stored
/// time that is loaded and stored again come back unchanged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    instant: Instant,
    wall_ms: u64,
}

impl Clock {
    pub(crate) fn now() -> Self {
        Self {
            instant: Instant::now(),
            wall_ms: SystemTime::UNIX_EPOCH
                .elapsed()
                .unwrap_or_default()
                .as_millis() as u64,
        }
    }

    pub(crate) fn instant(&self) -> Instant {
        self.instant
    }

    fn to_ms(self, t: Instant) -> u64 {
        let before = self.instant.saturating_duration_since(t).as_millis() as u64;
        let after = t.saturating_duration_since(self.instant).as_millis() as u64;
        (self.wall_ms + after).saturating_sub(before)
    }

    fn instant_of_ms(self, ms: u64) -> Instant {
        if ms <= self.wall_ms {
            self.instant
                .checked_sub(Duration::from_millis(self.wall_ms - ms))
                .unwrap_or(self.instant)
        } else {
            // Another host's clock ahead of ours.
            self.instant + Duration::from_millis(ms - self.wall_ms)
        }
    }
}

impl Registry {
    /// The registry holding job `rdzv_id` as `stored` records it (none: no job yet), with the
    /// nodes in `alive` heard from now and the others silent past the job's timeout. The
    /// job's own timings (set by its first node) replace those of `settings`.
    pub(crate) fn load(
        mut settings: Settings,
        rdzv_id: &str,
        stored: Option<proto::StoredJob>,
        alive: &HashSet<String>,
        clock: Clock,
    ) -> Result<Self, Error> {
        let Some(stored) = stored else {
            return Ok(Self::new(settings));
        };
        if stored.timeout_ms > 0 {
            settings.timeout = Duration::from_millis(stored.timeout_ms);
        }
        settings.last_call = Duration::from_millis(stored.last_call_ms);
        let now = clock.instant();
        let silent = now
            .checked_sub(settings.timeout + Duration::from_millis(1))
            .unwrap_or(now);
        let mut rounds = HashMap::new();
        for round in stored.rounds {
            let members = round
                .members
                .into_iter()
                .map(wire::member_from_proto)
                .collect::<Result<Vec<_>, _>>()?;
            let config = wire::config_from_proto(round.config)?;
            let formed = FormedRound::new(
                round.job,
                round.number,
                round.restart_count,
                config,
                members,
            )?;
            rounds.insert(round.number, Arc::new(formed));
        }
        let round = |number: u64| {
            rounds
                .get(&number)
                .cloned()
                .ok_or(Error::Wire(WireError::UnknownRound { round: number }))
        };
        let mut nodes = HashMap::new();
        for node in stored.nodes {
            let state = match node.state {
                Some(State::WaitingSinceMs(ms)) => NodeState::Waiting(clock.instant_of_ms(ms)),
                Some(State::Member(_)) => NodeState::Member,
                Some(State::Idle(_)) => NodeState::Idle,
                None => {
                    return Err(WireError::Missing {
                        field: "a node's state",
                    }
                    .into());
                }
            };
            let last_round = match node.last_round {
                0 => None,
                n => Some(round(n)?),
            };
            let last_seen = if alive.contains(&node.node_id) {
                now
            } else {
                silent
            };
            nodes.insert(
                node.node_id,
                Node {
                    seq: node.seq,
                    host: node.host,
                    ports: wire::ports_from_proto(&node.ports)?,
                    name: node.name,
                    last_seen,
                    state,
                    last_round,
                    secret: credentials::loaded(&node.secret_hmac, node.open, "a node's secret")?,
                    notice: node.notice.map(|n| StandingNotice {
                        cloud: n.cloud,
                        kind: n.kind,
                        deadline: (n.deadline_ms != 0).then(|| clock.instant_of_ms(n.deadline_ms)),
                        detail: n.detail,
                    }),
                },
            );
        }
        let phase = match (stored.done, stored.running) {
            (Some(done), _) => Phase::Done(wire::done_from_proto(done)?),
            (None, 0) => Phase::Forming,
            (None, n) => Phase::Running(round(n)?),
        };
        let job = Job {
            id: rdzv_id.to_owned(),
            incarnation: stored.incarnation,
            config: wire::config_from_proto(stored.config)?,
            token: credentials::loaded(&stored.token_hmac, stored.open, "the job's token")?,
            nodes,
            next_seq: stored.next_seq,
            phase,
            rounds_formed: stored.rounds_formed,
            restart_count: stored.restart_count,
            ended: stored
                .ended
                .into_iter()
                .map(wire::end_from_proto)
                .collect::<Result<VecDeque<_>, _>>()?,
            first_failure: stored
                .first_failure
                .map(wire::failure_from_proto)
                .transpose()?,
            last_failure: stored
                .last_failure
                .map(wire::failure_from_proto)
                .transpose()?,
            task_restarts: stored
                .task_restarts
                .into_iter()
                .map(wire::task_restarts_from_proto)
                .collect::<Result<_, _>>()?,
            // Done never exceeds asked, whatever a record says.
            chief_asks: stored.chief_asks,
            chief_asks_done: stored.chief_asks_done,
            churn: Churn::whole_at(
                (stored.churn_whole_at_ms != 0)
                    .then(|| clock.instant_of_ms(stored.churn_whole_at_ms)),
            ),
            hosts: stored
                .hosts
                .into_iter()
                .map(|h| {
                    let record = HostRecord {
                        failures: h
                            .failures_ms
                            .iter()
                            .map(|&ms| clock.instant_of_ms(ms))
                            .collect(),
                        aside_until: (h.aside_until_ms != 0)
                            .then(|| clock.instant_of_ms(h.aside_until_ms)),
                        times_aside: h.times_aside,
                        reason: h.reason,
                    };
                    (h.host, record)
                })
                .collect(),
            crash_loop: CrashLoop {
                last: (!stored.crash_host.is_empty()).then(|| LastFailure {
                    host: stored.crash_host,
                    signature: (!stored.crash_signature.is_empty())
                        .then(|| Signature::from_stored(stored.crash_signature)),
                }),
            },
            departed: (stored.departed_ms != 0).then(|| clock.instant_of_ms(stored.departed_ms)),
            notices: stored.notices,
            planned_in_a_row: stored.planned_in_a_row,
            last_arrival: clock.instant_of_ms(stored.last_arrival_ms),
            empty_since: (stored.empty_since_ms != 0)
                .then(|| clock.instant_of_ms(stored.empty_since_ms)),
            changed: watch::Sender::new(0),
            // etcd knows no caller's address.
            creator: None,
        };
        let mut registry = Self::new(settings);
        registry.jobs.insert(rdzv_id.to_owned(), job);
        Ok(registry)
    }

    /// Job `rdzv_id` as the etcd backend stores it; `None` when the registry has no such job
    /// (never had, or forgot it). The same job gives the same bytes: nodes and rounds in
    /// order.
    pub(crate) fn store(&self, rdzv_id: &str, clock: Clock) -> Option<proto::StoredJob> {
        let job = self.jobs.get(rdzv_id)?;
        let mut rounds = BTreeMap::new();
        if let Phase::Running(round) = &job.phase {
            rounds.insert(round.number, Arc::clone(round));
        }
        let mut nodes: Vec<(&String, &Node)> = job.nodes.iter().collect();
        nodes.sort_unstable_by_key(|(_, n)| n.seq);
        let nodes = nodes
            .into_iter()
            .map(|(id, n)| {
                if let Some(round) = &n.last_round {
                    rounds.insert(round.number, Arc::clone(round));
                }
                proto::StoredNode {
                    node_id: id.clone(),
                    seq: n.seq,
                    host: n.host.clone(),
                    ports: n.ports.iter().map(|&p| u32::from(p)).collect(),
                    name: n.name.clone(),
                    state: Some(match n.state {
                        NodeState::Waiting(since) => State::WaitingSinceMs(clock.to_ms(since)),
                        NodeState::Member => State::Member(true),
                        NodeState::Idle => State::Idle(true),
                    }),
                    last_round: n.last_round.as_ref().map_or(0, |r| r.number),
                    secret_hmac: credentials::stored(n.secret),
                    open: n.secret.is_none(),
                    notice: n.notice.as_ref().map(|n| proto::StoredNotice {
                        cloud: n.cloud.clone(),
                        kind: n.kind.clone(),
                        deadline_ms: n.deadline.map_or(0, |t| clock.to_ms(t)),
                        detail: n.detail.clone(),
                    }),
                }
            })
            .collect();
        let (running, done) = match &job.phase {
            Phase::Forming => (0, None),
            Phase::Running(round) => (round.number, None),
            Phase::Done(done) => (0, Some(wire::done_to_proto(done))),
        };
        Some(proto::StoredJob {
            incarnation: job.incarnation,
            config: Some(wire::config_to_proto(&job.config)),
            nodes,
            next_seq: job.next_seq,
            running,
            done,
            rounds_formed: job.rounds_formed,
            restart_count: job.restart_count,
            ended: job.ended.iter().map(wire::end_to_proto).collect(),
            first_failure: job.first_failure.as_ref().map(wire::failure_to_proto),
            last_failure: job.last_failure.as_ref().map(wire::failure_to_proto),
            task_restarts: job
                .task_restarts
                .iter()
                .map(wire::task_restarts_to_proto)
                .collect(),
            chief_asks: job.chief_asks,
            chief_asks_done: job.chief_asks_done,
            departed_ms: job.departed.map_or(0, |t| clock.to_ms(t)),
            notices: job.notices,
            planned_in_a_row: job.planned_in_a_row,
            churn_whole_at_ms: job
                .churn
                .stored(clock.instant())
                .map_or(0, |t| clock.to_ms(t)),
            hosts: job
                .hosts
                .iter()
                .map(|(host, r)| proto::StoredHost {
                    host: host.clone(),
                    failures_ms: r.failures.iter().map(|&t| clock.to_ms(t)).collect(),
                    aside_until_ms: r.aside_until.map_or(0, |t| clock.to_ms(t)),
                    times_aside: r.times_aside,
                    reason: r.reason.clone(),
                })
                .collect(),
            crash_host: job
                .crash_loop
                .last
                .as_ref()
                .map_or_else(String::new, |l| l.host.clone()),
            crash_signature: job
                .crash_loop
                .last
                .as_ref()
                .and_then(|l| l.signature.as_ref())
                .map_or_else(String::new, |s| s.as_str().to_owned()),
            last_arrival_ms: clock.to_ms(job.last_arrival),
            empty_since_ms: job.empty_since.map_or(0, |t| clock.to_ms(t)),
            rounds: rounds
                .values()
                .map(|r| wire::round_to_proto(&r.round, 0))
                .collect(),
            last_call_ms: self.settings.last_call.as_millis() as u64,
            timeout_ms: self.settings.timeout.as_millis() as u64,
            token_hmac: credentials::stored(job.token),
            open: job.token.is_none(),
        })
    }

    /// The ids of job `rdzv_id`'s nodes.
    pub(crate) fn node_ids(&self, rdzv_id: &str) -> Vec<String> {
        self.jobs
            .get(rdzv_id)
            .map(|j| j.nodes.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The nodes of job `rdzv_id` not in `alive` (they joined in this call), with their
    /// hosts: each gets its live key.
    pub(crate) fn new_nodes(
        &self,
        rdzv_id: &str,
        alive: &HashSet<String>,
    ) -> Vec<(String, String)> {
        self.jobs.get(rdzv_id).map_or_else(Vec::new, |j| {
            j.nodes
                .iter()
                .filter(|(id, _)| !alive.contains(*id))
                .map(|(id, n)| (id.clone(), n.host.clone()))
                .collect()
        })
    }

    /// When the clock alone changes job `rdzv_id` next (see `Job::next_deadline`).
    pub(crate) fn next_deadline(&self, rdzv_id: &str) -> Option<Instant> {
        self.jobs.get(rdzv_id)?.next_deadline(&self.settings)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use super::super::Reported;
    use super::super::tests::{config, join_as, join_on, registry, report};
    use super::*;
    use crate::TaskStatus;
    use crate::rendezvous::credentials::Digest;

    /// Loads what was stored, as the next agent does.
    fn reload(r: &Registry, alive: &[&str], clock: Clock) -> Registry {
        let stored = r.store("job", clock);
        let alive: HashSet<String> = alive.iter().map(|s| s.to_string()).collect();
        Registry::load(r.settings.clone(), "job", stored, &alive, clock).unwrap()
    }

    #[test]
    fn a_job_stored_and_loaded_is_the_same_job() {
        let mut r = registry();
        let clock = Clock::now();
        let t0 = clock.instant();
        let c = config(2, 3, "chief=1", 2);
        join_as(&mut r, &c, "a", 2001, t0).unwrap();
        join_as(&mut r, &c, "b", 2002, t0).unwrap();
        r.tick(t0 + Duration::from_secs(10));
        let Reported { counted, .. } =
            report(&mut r, "a", 1, 0, TaskStatus::Exited(3), "boom", t0).unwrap();
        assert!(counted);
        join_as(&mut r, &c, "a", 2001, t0).unwrap();
        let first = r.store("job", clock).unwrap();
        let loaded = reload(&r, &["a", "b"], clock);
        // The same bytes: nothing was lost or reordered.
        assert_eq!(loaded.store("job", clock).unwrap(), first);
        assert_eq!((first.restart_count, first.rounds_formed), (1, 1));
        assert!(first.first_failure.is_some());
        assert_eq!(first.crash_signature, "exited with status 3: boom");
    }

    #[test]
    fn in_place_restarts_are_kept_in_the_record() {
        let mut r = registry();
        let clock = Clock::now();
        let t0 = clock.instant();
        let c = config(2, 2, "chief=1,ps=1", 0);
        join_as(&mut r, &c, "a", 2001, t0).unwrap();
        join_as(&mut r, &c, "b", 2002, t0).unwrap();
        // b runs ps:0 alone: a chief's (a) failure restarts it in place.
        let answer = report(&mut r, "a", 1, 0, TaskStatus::Exited(1), "OSError: 5", t0).unwrap();
        assert_eq!(answer.task_restarts, 1);
        let first = r.store("job", clock).unwrap();
        assert_eq!(first.task_restarts.len(), 1);
        assert_eq!(first.crash_host, "node a on 127.0.0.1");
        let mut loaded = reload(&r, &["a", "b"], clock);
        assert_eq!(loaded.store("job", clock).unwrap(), first);
        // The loaded job remembers both: the second restart, and the crash loop it makes.
        let again = report(
            &mut loaded,
            "a",
            1,
            0,
            TaskStatus::Exited(1),
            "OSError: 6",
            t0,
        );
        assert_eq!(again.unwrap().in_place, None, "a crash loop");
    }

    #[test]
    fn an_ask_to_restart_the_chief_is_kept_in_the_record() {
        let mut r = registry();
        let clock = Clock::now();
        let t0 = clock.instant();
        let c = config(2, 2, "chief=1,ps=1", 0);
        join_as(&mut r, &c, "a", 2001, t0).unwrap();
        join_as(&mut r, &c, "b", 2002, t0).unwrap();
        // b's parameter server fails: a, which runs the chief, is asked to restart it.
        report(&mut r, "b", 1, 0, TaskStatus::Signaled(9), "", t0).unwrap();
        let first = r.store("job", clock).unwrap();
        assert_eq!((first.chief_asks, first.chief_asks_done), (1, 0));
        let mut loaded = reload(&r, &["a", "b"], clock);
        assert_eq!(loaded.store("job", clock).unwrap(), first);
        assert_eq!(
            loaded.heartbeat("job", "a", 1, (0, 0), None, t0).unwrap(),
            crate::RoundStatus::RestartChief(1)
        );
        loaded.heartbeat("job", "a", 1, (1, 0), None, t0).unwrap();
        assert_eq!(loaded.store("job", clock).unwrap().chief_asks_done, 1);
    }

    #[test]
    fn a_notice_and_a_departure_are_kept_in_the_record() {
        let mut r = registry();
        let clock = Clock::now();
        let t0 = clock.instant();
        let c = config(1, 3, "", 0);
        join_on(&mut r, &c, "a", "10.0.0.1", 2001, t0).unwrap();
        join_on(&mut r, &c, "b", "10.0.0.2", 2001, t0).unwrap();
        join_on(&mut r, &c, "c", "10.0.0.3", 2001, t0).unwrap();
        let notice = |kind: &str, remaining| crate::HostNotice {
            cloud: "azure".into(),
            kind: kind.into(),
            remaining,
            detail: "Preempt".into(),
        };
        let soon = notice("preemption", Some(std::time::Duration::from_secs(30)));
        r.heartbeat("job", "b", 1, (0, 0), Some((&soon, t0)), t0)
            .unwrap();
        r.leave("job", "c", Some(&soon), t0);
        let first = r.store("job", clock).unwrap();
        assert_eq!(first.nodes[1].notice.as_ref().unwrap().kind, "preemption");
        assert!(first.departed_ms > 0);
        assert_eq!(first.hosts[0].host, "10.0.0.3");
        let loaded = reload(&r, &["a", "b"], clock);
        assert_eq!(loaded.store("job", clock).unwrap(), first);
        let status = loaded.status("job", t0).unwrap();
        assert_eq!(status.nodes[1].notice.as_ref(), Some(&soon));
        assert_eq!(status.hosts_aside[0].host, "10.0.0.3");
    }

    #[test]
    fn the_record_keeps_the_hashes_of_token_and_secrets_and_checks_them_when_loaded() {
        use crate::rendezvous::credentials::{Credentials, Proof};
        let mut r = registry();
        let clock = Clock::now();
        let c = config(1, 2, "", 0);
        let proof = Proof {
            token: Some(Digest::keyed("job", "the job's token")),
            secret: Some(Digest::keyed("job", "a's secret")),
        };
        let args = crate::rendezvous::JoinArgs {
            rdzv_id: "job".into(),
            config: c,
            node_id: Some("a".into()),
            host: "127.0.0.1".into(),
            ports: vec![2001],
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        };
        r.join(args, &proof, clock.instant()).unwrap();
        let stored = r.store("job", clock).unwrap();
        assert_eq!(
            stored.token_hmac,
            Digest::keyed("job", "the job's token").to_stored()
        );
        assert_eq!(
            stored.nodes[0].secret_hmac,
            Digest::keyed("job", "a's secret").to_stored()
        );
        assert!(!stored.open && !stored.nodes[0].open);
        let bytes = prost::Message::encode_to_vec(&stored);
        assert!(
            !bytes.windows(9).any(|w| w == b"a's secre"),
            "a secret in the record"
        );
        let loaded = reload(&r, &["a"], clock);
        loaded
            .authorize("job", Some("a"), "Heartbeat", &proof)
            .unwrap();
        let forged = Proof {
            secret: None,
            ..proof
        };
        assert!(
            loaded
                .authorize("job", Some("a"), "Heartbeat", &forged)
                .is_err()
        );
        // A record whose hashes were removed is refused, not loaded as an open job of open
        // nodes; so is one that marks a hashed job open.
        let load = |record: proto::StoredJob| {
            Registry::load(
                r.settings.clone(),
                "job",
                Some(record),
                &HashSet::from(["a".to_owned()]),
                clock,
            )
        };
        let mut cleared = stored.clone();
        cleared.token_hmac.clear();
        let err = load(cleared).unwrap_err().to_string();
        assert!(
            err.starts_with("the job's token has a 0-byte hash and open = false"),
            "{err}"
        );
        let mut cleared = stored.clone();
        cleared.nodes[0].secret_hmac.clear();
        let err = load(cleared).unwrap_err().to_string();
        assert!(
            err.starts_with("a node's secret has a 0-byte hash"),
            "{err}"
        );
        let mut both = stored.clone();
        both.open = true;
        assert!(load(both).is_err());
        // An open job of open nodes says so, and loads open.
        let mut open = r.store("job", clock).unwrap();
        open.token_hmac.clear();
        open.open = true;
        open.nodes[0].secret_hmac.clear();
        open.nodes[0].open = true;
        load(open)
            .unwrap()
            .authorize("job", Some("a"), "Heartbeat", &Proof::default())
            .unwrap();
    }

    #[test]
    fn a_node_without_its_lease_key_is_lost_at_the_next_tick() {
        let mut r = registry();
        let clock = Clock::now();
        let t0 = clock.instant();
        let c = config(2, 2, "", 0);
        join_as(&mut r, &c, "a", 2001, t0).unwrap();
        join_as(&mut r, &c, "b", 2002, t0).unwrap();
        let mut loaded = reload(&r, &["a"], clock);
        loaded.tick(t0);
        assert_eq!(loaded.node_ids("job"), vec!["a".to_owned()]);
        let stored = loaded.store("job", clock).unwrap();
        assert_eq!((stored.running, stored.restart_count), (0, 1));
    }

    #[test]
    fn a_record_naming_a_round_it_lacks_is_refused() {
        let mut r = registry();
        let clock = Clock::now();
        let c = config(1, 1, "", 0);
        join_as(&mut r, &c, "a", 2001, clock.instant()).unwrap();
        let mut stored = r.store("job", clock).unwrap();
        stored.rounds.clear();
        let err = Registry::load(
            r.settings.clone(),
            "job",
            Some(stored),
            &HashSet::new(),
            clock,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "round 1 is named but not stored");
    }
}
