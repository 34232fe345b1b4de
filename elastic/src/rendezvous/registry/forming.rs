//! How the next round forms: it closes when `max` nodes wait, or at least `min` and either
//! the last call has passed or every member of the last round still in the job is back;
//! the first to wait get in, in the order they first joined. Until then, what it still
//! waits for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::calls::{Pending, Settings};
use super::formed::FormedRound;
use super::job::{Job, Phase};
use super::node::{Node, NodeState};
use super::round_size;
use crate::assignment::Member;
use crate::error::duration;
use crate::outcome::JobDone;

impl Job {
    fn waiting(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n.state, NodeState::Waiting(_)))
    }

    /// The waiting nodes a round may take at `now`: not those of a host set aside.
    pub(super) fn eligible(&self, now: Instant) -> impl Iterator<Item = (&String, &Node)> {
        self.waiting()
            .filter(move |(_, n)| !self.is_aside(&n.host, now))
    }

    /// Whether a round has run and every node still in the job waits for the next one: none
    /// is idle after the last round's end (a lost node was dropped; one that left, too).
    fn all_back(&self) -> bool {
        self.rounds_formed > 0
            && self
                .nodes
                .values()
                .all(|n| matches!(n.state, NodeState::Waiting(_)))
    }

    pub(super) fn pending(&self, now: Instant, last_call: Duration) -> Pending {
        let waiting = self.eligible(now).count() as u32;
        let (min, max) = (self.config.nodes().min(), self.config.nodes().max());
        let round = self.next_round();
        let mut detail = match &self.phase {
            Phase::Running(r) if self.deferred_until(now).is_some_and(|at| at > now) => {
                let wait = self.churn.wait(now).unwrap_or_default();
                self.deferred_note(r.number, wait, now)
            }
            Phase::Running(r) => format!(
                "round {} is running with {} of max {max} nodes; waiting for round {round}",
                r.number,
                r.round.members().len()
            ),
            _ if waiting < min => format!(
                "round {round} waits for nodes: {waiting} of min {min} (max {max}) have joined"
            ),
            _ => {
                let left =
                    last_call.saturating_sub(now.saturating_duration_since(self.last_arrival));
                format!(
                    "round {round} has {waiting} of max {max} nodes; it closes when {max} have \
                     joined or {} after the last join ({} left)",
                    duration(last_call),
                    duration(left)
                )
            }
        };
        for aside in self.hosts_aside(now) {
            if self.waiting().any(|(_, n)| n.host == aside.host) {
                detail.push_str(&format!(
                    "; {} is set aside for {} more: {}",
                    aside.host,
                    duration(aside.remaining),
                    aside.reason
                ));
            }
        }
        Pending {
            round,
            waiting,
            detail,
        }
    }

    /// When the clock alone would change the job: the last call of a round that has its
    /// `min` nodes running out, or a job without nodes being forgotten. `None`: only a call
    /// (or a node going silent) changes it. The etcd backend wakes its waiters then (the
    /// memory store ticks instead, so only the etcd backend compiles it).
    #[cfg(feature = "etcd")]
    pub(super) fn next_deadline(&self, settings: &Settings) -> Option<Instant> {
        if self.nodes.is_empty() {
            return self.empty_since.map(|since| since + settings.timeout);
        }
        let forming = matches!(self.phase, Phase::Forming);
        if !forming {
            // A host waiting out the churn budget gets in when the budget allows.
            return self.deferred_until(Instant::now());
        }
        let now = Instant::now();
        // A host set aside coming back may let the round close.
        let back = self.next_return(now);
        let last_call = (self.eligible(now).count() >= self.config.nodes().min() as usize)
            .then(|| self.last_arrival + settings.last_call);
        [back, last_call].into_iter().flatten().min()
    }

    /// Closes the next round when `max` nodes wait, or at least `min` and the last call has
    /// passed or every node of the last round still in the job waits again. Returns whether
    /// it closed (or the job failed trying).
    ///
    /// The last call gathers hosts that start at about the same time into the first round.
    /// After a round, whom to wait for is known: its members that are still in the job (a
    /// lost one was dropped), and whoever else already waits. Waiting out a last call then
    /// only adds to the time a failure costs (a restart after a lost host would wait it in
    /// full); a host that comes later joins a running round, which ends it cleanly.
    pub(super) fn try_close(&mut self, now: Instant, settings: &Settings) -> bool {
        if !matches!(self.phase, Phase::Forming) {
            return false;
        }
        let (min, max) = (
            self.config.nodes().min() as usize,
            self.config.nodes().max() as usize,
        );
        let mut waiting: Vec<(Instant, u64, &String)> = self
            .eligible(now)
            .filter_map(|(id, n)| match n.state {
                NodeState::Waiting(since) => Some((since, n.seq, id)),
                _ => None,
            })
            .collect();
        let last_call_over = now.saturating_duration_since(self.last_arrival) >= settings.last_call;
        if !(waiting.len() >= max || (waiting.len() >= min && (last_call_over || self.all_back())))
        {
            return false;
        }
        // The first to wait get in; a round lists them in the order they first joined.
        waiting.sort_unstable();
        waiting.truncate(max);
        waiting.sort_unstable_by_key(|&(_, seq, _)| seq);
        let ids: Vec<String> = waiting.into_iter().map(|(_, _, id)| id.clone()).collect();
        let members: Vec<Member> = ids
            .iter()
            .map(|id| {
                let n = &self.nodes[id];
                Member {
                    node_id: id.clone(),
                    host: n.host.clone(),
                    ports: n.ports.clone(),
                    name: n.name.clone(),
                }
            })
            .collect();
        let number = self.next_round();
        let formed = FormedRound::new(
            self.incarnation,
            number,
            self.restart_count,
            self.config.clone(),
            members,
        );
        // Every node was checked when it joined, so a round that cannot form is a bug; one
        // too large to start its tasks is the job's size. Either way the job fails with the
        // reason rather than waiting for ever.
        let formed = formed
            .map_err(|e| {
                let e = cluster_spec::__private::error_chain::Chain(&e);
                format!("round {number} cannot form: {e}")
            })
            .and_then(|round| match round_size::too_large(&round.round) {
                Some(why) => Err(why),
                None => Ok(round),
            });
        let round = match formed {
            Ok(round) => Arc::new(round),
            Err(detail) => {
                tracing::error!(rdzv_id = %self.id, round = number, error = %detail, "round cannot form");
                self.phase = Phase::Done(JobDone {
                    succeeded: false,
                    detail,
                    first_failure: self.first_failure.clone(),
                    round: number,
                });
                return true;
            }
        };
        for id in &ids {
            let node = self.nodes.get_mut(id).expect("listed above");
            node.state = NodeState::Member;
            node.last_round = Some(Arc::clone(&round));
        }
        tracing::info!(rdzv_id = %self.id, round = number, nodes = ids.len(),
            restart_count = self.restart_count, "round formed");
        self.rounds_formed = number;
        settings.metrics.round_formed();
        if let Some(departed) = self.departed.take() {
            let after = now.saturating_duration_since(departed);
            tracing::info!(rdzv_id = %self.id, round = number, after_s = after.as_secs_f64(),
                "round formed after a node left ahead of its cloud's notice");
            settings.metrics.departure_to_round(after);
        }
        self.phase = Phase::Running(round);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::Waited;
    use super::super::tests::{LAST_CALL, TIMEOUT, config, join_as, registry, round_of};

    #[test]
    fn closes_at_max_at_once() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 3, "", 0));
        for (i, id) in ["a", "b"].iter().enumerate() {
            let joined = join_as(&mut r, &c, id, 1000 + i as u16, t0).unwrap();
            assert_eq!(joined.round, 1);
        }
        assert!(round_of(&mut r, "a", 0, t0).is_none());
        let joined = join_as(&mut r, &c, "c", 1002, t0).unwrap();
        assert_eq!((joined.round, joined.note.as_str()), (1, "round 1 formed"));
        assert_eq!(
            round_of(&mut r, "c", 0, t0),
            Some((1, 0, vec!["a".into(), "b".into(), "c".into()], 2))
        );
    }

    #[test]
    fn after_a_round_closes_once_its_remaining_members_are_back() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 5));
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            join_as(&mut r, &c, id, 1000 + i as u16, t0).unwrap();
        }
        let t1 = t0 + LAST_CALL;
        r.tick(t1);
        assert_eq!(round_of(&mut r, "a", 0, t1).unwrap().0, 1);
        // c is lost; a and b join again at once: round 2 needs no last call.
        let t2 = t1 + TIMEOUT / 2;
        r.heartbeat("job", "a", 1, (0, 0), None, t2).unwrap();
        r.heartbeat("job", "b", 1, (0, 0), None, t2).unwrap();
        let t3 = t1 + TIMEOUT + Duration::from_millis(1);
        r.tick(t3);
        join_as(&mut r, &c, "a", 1000, t3).unwrap();
        assert!(round_of(&mut r, "a", 1, t3).is_none(), "b is not back yet");
        join_as(&mut r, &c, "b", 1001, t3).unwrap();
        assert_eq!(
            round_of(&mut r, "b", 1, t3),
            Some((2, 1, vec!["a".into(), "b".into()], 1))
        );
    }

    #[test]
    fn closes_after_the_last_call_with_min() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        r.tick(t0 + LAST_CALL * 2);
        assert!(
            round_of(&mut r, "a", 0, t0 + LAST_CALL * 2).is_none(),
            "below min"
        );
        let t1 = t0 + LAST_CALL * 2;
        join_as(&mut r, &c, "b", 1001, t1).unwrap();
        r.tick(t1 + LAST_CALL / 2);
        let Waited::Pending(p) = r.wait("job", "a", 0, t1 + LAST_CALL / 2).unwrap() else {
            panic!("closed before the last call");
        };
        assert_eq!(
            p.detail,
            "round 1 has 2 of max 4 nodes; it closes when 4 have joined or 3.0 s after the last \
             join (1.5 s left)"
        );
        r.tick(t1 + LAST_CALL);
        assert_eq!(round_of(&mut r, "b", 0, t1 + LAST_CALL).unwrap().0, 1);
    }
}
