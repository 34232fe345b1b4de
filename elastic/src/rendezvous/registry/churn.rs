//! Membership churn: rounds ended by a host joining or leaving. Neither is a failure, so
//! neither counts against `max_restarts`; without a bound, anyone who may join (anyone, for
//! an open job; any token holder) could loop join and leave and restart the job forever.
//! So each job allows [`CHURN_BUDGET`] such ends per [`CHURN_WINDOW`]; past it, a new host
//! joining a running round does not end it: it waits, and the round ends to take it in once
//! the window allows (or at the round's own end). A member that leaves, or joins again, still
//! ends its round (its tasks are gone) and is counted.
//!
//! The defaults: every such end restarts every task of the job (a TensorFlow import of
//! seconds, then a restore from the last checkpoint), so three in ten minutes can cost a real
//! job a few minutes of ten, and more would cost most of them. A scale-up whose hosts arrive
//! within a last call of each other is one end; three separate arrivals in ten minutes get in
//! at once, a fourth within ten minutes of the first.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::job::{Job, Phase};
use crate::error::duration;
use crate::job_status::MembershipChurn;
use crate::outcome::EndReason;

/// Rounds a job's membership may end per [`CHURN_WINDOW`].
pub(crate) const CHURN_BUDGET: usize = 3;
/// The window [`CHURN_BUDGET`] counts in.
pub(crate) const CHURN_WINDOW: Duration = Duration::from_secs(10 * 60);

/// When a job's recent rounds ended for a host joining or leaving, oldest first.
#[derive(Debug, Clone, Default)]
pub(super) struct Churn {
    ends: VecDeque<Instant>,
}

impl Churn {
    /// The ends as a stored record lists them (oldest first).
    pub(super) fn from_ends(ends: impl IntoIterator<Item = Instant>) -> Self {
        Self {
            ends: ends.into_iter().collect(),
        }
    }

    pub(super) fn ends(&self) -> impl Iterator<Item = Instant> + '_ {
        self.ends.iter().copied()
    }

    /// Counts a round ended at `now` by a host joining or leaving.
    pub(super) fn record(&mut self, now: Instant) {
        self.forget(now);
        self.ends.push_back(now);
    }

    /// How many ends fall in the window before `now`.
    pub(super) fn in_window(&self, now: Instant) -> usize {
        self.ends
            .iter()
            .filter(|&&t| now.saturating_duration_since(t) < CHURN_WINDOW)
            .count()
    }

    /// How long a joining host waits before its join may end a round: `None` when it may
    /// now.
    pub(super) fn wait(&self, now: Instant) -> Option<Duration> {
        let in_window = self.in_window(now);
        if in_window < CHURN_BUDGET {
            return None;
        }
        // The end that must leave the window for one more to fit.
        let oldest = self
            .ends
            .iter()
            .filter(|&&t| now.saturating_duration_since(t) < CHURN_WINDOW)
            .nth(in_window - CHURN_BUDGET)?;
        Some((*oldest + CHURN_WINDOW).saturating_duration_since(now))
    }

    fn forget(&mut self, now: Instant) {
        while self
            .ends
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= CHURN_WINDOW)
        {
            self.ends.pop_front();
        }
    }
}

impl Job {
    /// What a status says of the budget.
    pub(super) fn churn_status(&self, now: Instant) -> MembershipChurn {
        MembershipChurn {
            ends: self.churn.in_window(now) as u32,
            budget: CHURN_BUDGET as u32,
            window: CHURN_WINDOW,
            wait: self.churn.wait(now),
        }
    }

    /// What a host joining round `round` is told when the budget is spent: it waits `wait`.
    pub(super) fn deferred_note(&self, round: u64, wait: Duration, now: Instant) -> String {
        format!(
            "round {round} keeps running: {} of its rounds ended for hosts joining or leaving \
             in the last {}, the most a job allows; this node waits for the next round, \
             which starts for it in {} at the latest",
            self.churn.in_window(now),
            duration(CHURN_WINDOW),
            duration(wait)
        )
    }

    /// When a host that waits out the budget may end the running round: `None` when none
    /// waits (or the round is full).
    pub(super) fn deferred_until(&self, now: Instant) -> Option<Instant> {
        let Phase::Running(round) = &self.phase else {
            return None;
        };
        let room = round.round.members().len() < self.config.nodes().max() as usize;
        if !room || self.eligible(now).next().is_none() {
            return None;
        }
        Some(now + self.churn.wait(now).unwrap_or_default())
    }

    /// Ends the running round to take in a host that waited out the budget, once the
    /// window allows.
    pub(super) fn admit_deferred(&mut self, now: Instant) {
        if self.deferred_until(now).is_none_or(|at| at > now) {
            return;
        }
        let Phase::Running(round) = &self.phase else {
            return;
        };
        let (number, size) = (round.number, round.round.members().len());
        let max = self.config.nodes().max();
        let who = match self.eligible(now).min_by_key(|(_, n)| n.seq) {
            Some((id, node)) => node.describe(id),
            None => return,
        };
        let detail = format!(
            "{who} joined and waited for the membership budget; round {number} had {size} of \
             max {max} nodes"
        );
        self.end_round(EndReason::NodeJoined, detail, now);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{LAST_CALL, config, ended, join_as, registry, round_of};
    use super::*;
    use crate::outcome::RoundStatus;

    #[test]
    fn join_and_leave_in_a_loop_ends_three_rounds_a_window_then_joins_wait_their_turn() {
        let (mut r, t0, c) = (registry(), Instant::now(), config(1, 3, "", 0));
        join_as(&mut r, &c, "a", 1000, t0).unwrap();
        let mut t = t0 + LAST_CALL;
        r.tick(t);
        let mut round = round_of(&mut r, "a", 0, t).unwrap().0;
        let first_end = t + Duration::from_secs(1);
        for k in 0..3u16 {
            t += Duration::from_secs(1);
            let x = format!("x{k}");
            let joined = join_as(&mut r, &c, &x, 2000 + k, t).unwrap();
            assert_eq!(
                joined.note,
                format!("round {round} ended to take this node in")
            );
            r.leave("job", &x, t);
            join_as(&mut r, &c, "a", 1000, t).unwrap();
            r.tick(t);
            round = round_of(&mut r, "a", round, t).unwrap().0;
        }
        assert_eq!(round, 4);
        let metrics = r.settings.metrics.clone();
        t += Duration::from_secs(1);
        let joined = join_as(&mut r, &c, "x3", 2003, t).unwrap();
        assert!(
            joined
                .note
                .starts_with("round 4 keeps running: 3 of its rounds ended for hosts joining"),
            "{}",
            joined.note
        );
        assert_eq!(metrics.joins_deferred(), 1);
        let status = r.status("job", t).unwrap();
        assert_eq!((status.churn.ends, status.churn.budget), (3, 3));
        assert_eq!(status.churn.wait, Some(first_end + CHURN_WINDOW - t));
        assert_eq!(status.restart_count, 0, "no end was a failure");
        // Both stay alive until the first end leaves the window; then x3 gets in.
        while t < first_end + CHURN_WINDOW {
            t += Duration::from_secs(5);
            let beat = r.heartbeat("job", "a", 4, 0, t).unwrap();
            if t < first_end + CHURN_WINDOW {
                assert_eq!(beat, RoundStatus::Running, "at {:?}", t - first_end);
            }
            assert_eq!(round_of(&mut r, "x3", 0, t), None);
            r.tick(t);
        }
        let end = ended(&mut r, "a", 4, t);
        assert_eq!(end.reason, EndReason::NodeJoined);
        assert!(
            end.detail
                .starts_with("node x3 on 127.0.0.1 joined and waited"),
            "{}",
            end.detail
        );
        join_as(&mut r, &c, "a", 1000, t).unwrap();
        r.tick(t);
        assert_eq!(round_of(&mut r, "x3", 4, t).unwrap().2, ["a", "x3"]);
    }

    #[test]
    fn three_ends_per_window_then_a_wait_until_the_oldest_leaves_it() {
        let t0 = Instant::now();
        let mut churn = Churn::default();
        let s = Duration::from_secs;
        for k in 0..3 {
            assert_eq!(churn.wait(t0 + s(k)), None);
            churn.record(t0 + s(k));
        }
        assert_eq!(churn.in_window(t0 + s(3)), 3);
        assert_eq!(churn.wait(t0 + s(3)), Some(CHURN_WINDOW - s(3)));
        // The first end leaves the window: one more fits.
        assert_eq!(churn.wait(t0 + CHURN_WINDOW), None);
        churn.record(t0 + CHURN_WINDOW);
        assert_eq!(churn.wait(t0 + CHURN_WINDOW), Some(s(1)));
        assert_eq!(
            churn.ends().count(),
            3,
            "ends past the window are forgotten"
        );
    }
}
