//! Membership churn: rounds ended by a host joining or leaving. Neither is a failure, so
//! neither counts against `max_restarts`; without a bound, anyone who may join (anyone, for
//! an open job; any token holder) could loop join and leave and restart the job forever.
//! So each job has a budget of such ends: [`CHURN_BURST`] at once, then one more each
//! [`CHURN_REFILL`] (a token bucket, kept as the one instant it is whole again). Past it, a
//! new host joining a running round does not end it: it waits, and the round ends to take it
//! in once the budget allows (or at the round's own end). A member that leaves, or joins
//! again, still ends its round (its tasks are gone) and is counted.
//!
//! The defaults: every such end restarts every task of the job (a TensorFlow import of
//! seconds, then a restore from the last checkpoint). Three at once let a scale-up's hosts in
//! whatever order they come (hosts within a last call of each other are one end); one per
//! 200 s after that holds a join/leave loop to 18 restarts an hour, each a fraction of the
//! 200 s it buys. And no host waits longer than 200 s, well inside an agent's default
//! `--join-timeout` (10 minutes), so a legitimate host held back gets in rather than gives up.

use std::time::{Duration, Instant};

use super::job::{Job, Phase};
use crate::error::duration;
use crate::job_status::MembershipChurn;
use crate::outcome::EndReason;

/// Rounds a job's membership may end at once.
pub(crate) const CHURN_BURST: u32 = 3;
/// How long the budget takes to grow back by one end.
pub(crate) const CHURN_REFILL: Duration = Duration::from_secs(200);

/// A job's budget for rounds ended by hosts joining or leaving: the instant it is whole
/// again (none: it is).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Churn {
    whole_at: Option<Instant>,
}

impl Churn {
    /// The budget as a stored record keeps it.
    #[cfg(feature = "etcd")]
    pub(super) fn whole_at(whole_at: Option<Instant>) -> Self {
        Self { whole_at }
    }

    /// When it is whole again, for a stored record; `None` when it is at `now`.
    #[cfg(feature = "etcd")]
    pub(super) fn stored(&self, now: Instant) -> Option<Instant> {
        self.whole_at.filter(|&at| at > now)
    }

    /// Counts a round ended at `now` by a host joining or leaving (a member's leave even
    /// past the budget: its tasks are gone whatever the budget says). The debt stops at the
    /// whole budget: members leaving and joining again in a loop past it cannot make a new
    /// host wait more than one refill (they once pushed the wait to hours).
    pub(super) fn record(&mut self, now: Instant) {
        let from = self.whole_at.map_or(now, |at| at.max(now));
        let most = now + CHURN_REFILL * CHURN_BURST;
        self.whole_at = Some((from + CHURN_REFILL).min(most));
    }

    /// How many ends the budget still counts at `now`.
    pub(super) fn spent(&self, now: Instant) -> u32 {
        let owed = self.owed(now);
        // Whole refills owed, and one for a part.
        let refill = CHURN_REFILL.as_millis().max(1);
        owed.as_millis().div_ceil(refill) as u32
    }

    /// How long a joining host waits before its join may end a round: `None` when it may
    /// now.
    pub(super) fn wait(&self, now: Instant) -> Option<Duration> {
        let tolerance = CHURN_REFILL * (CHURN_BURST - 1);
        self.owed(now)
            .checked_sub(tolerance)
            .filter(|w| !w.is_zero())
    }

    /// How long until the budget is whole.
    fn owed(&self, now: Instant) -> Duration {
        self.whole_at
            .map_or(Duration::ZERO, |at| at.saturating_duration_since(now))
    }
}

impl Job {
    /// What a status says of the budget.
    pub(super) fn churn_status(&self, now: Instant) -> MembershipChurn {
        MembershipChurn {
            ends: self.churn.spent(now),
            budget: CHURN_BURST,
            refill: CHURN_REFILL,
            wait: self.churn.wait(now),
        }
    }

    /// What a host joining round `round` is told when the budget is spent: it waits `wait`.
    pub(super) fn deferred_note(&self, round: u64, wait: Duration, now: Instant) -> String {
        format!(
            "round {round} keeps running: hosts joining or leaving ended {} of its rounds, its \
             budget of {CHURN_BURST} (one more each {}); this node waits for the next round, \
             which starts for it in {} at the latest",
            self.churn.spent(now),
            duration(CHURN_REFILL),
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
    /// budget allows.
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
    fn join_and_leave_in_a_loop_ends_three_rounds_then_joins_wait_their_turn() {
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
            r.leave("job", &x, None, t);
            join_as(&mut r, &c, "a", 1000, t).unwrap();
            r.tick(t);
            round = round_of(&mut r, "a", round, t).unwrap().0;
        }
        assert_eq!(round, 4);
        let metrics = r.settings.metrics.clone();
        t += Duration::from_secs(1);
        let joined = join_as(&mut r, &c, "x3", 2003, t).unwrap();
        assert!(
            joined.note.starts_with(
                "round 4 keeps running: hosts joining or leaving ended 3 of its rounds, its \
                 budget of 3 (one more each 200.0 s)"
            ),
            "{}",
            joined.note
        );
        assert_eq!(metrics.joins_deferred(), 1);
        let status = r.status("job", t).unwrap();
        assert_eq!((status.churn.ends, status.churn.budget), (3, 3));
        // The first end's refill is due 200 s after it.
        let due = first_end + CHURN_REFILL;
        assert_eq!(status.churn.wait, Some(due - t));
        assert_eq!(status.restart_count, 0, "no end was a failure");
        // Both stay alive until the budget grows back by one; then x3 gets in.
        while t < due {
            t += Duration::from_secs(5);
            let beat = r.heartbeat("job", "a", 4, (0, 0), None, t).unwrap();
            if t < due {
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
    fn three_at_once_then_one_each_refill_and_no_wait_past_a_refill() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut churn = Churn::default();
        for k in 0..3 {
            assert_eq!(churn.wait(t0 + s(k)), None);
            churn.record(t0 + s(k));
        }
        assert_eq!(churn.spent(t0 + s(3)), 3);
        assert_eq!(churn.wait(t0 + s(3)), Some(CHURN_REFILL - s(3)));
        // One refill later, one more fits; then the next waits a whole refill at most.
        let later = t0 + CHURN_REFILL;
        assert_eq!((churn.wait(later), churn.spent(later)), (None, 2));
        churn.record(later);
        assert_eq!(churn.wait(later), Some(CHURN_REFILL));
        // Members leaving past the budget in a loop are counted, but the debt stops at the
        // whole budget: a joining host never waits more than a refill.
        for _ in 0..100 {
            churn.record(later);
        }
        assert_eq!(churn.wait(later), Some(CHURN_REFILL));
        assert_eq!(churn.spent(later), CHURN_BURST);
        // Whole again after every refill owed: nothing kept.
        let whole = later + CHURN_REFILL * CHURN_BURST;
        assert_eq!((churn.spent(whole), churn.wait(whole)), (0, None));
        #[cfg(feature = "etcd")]
        {
            assert_eq!(churn.stored(whole), None);
            assert_eq!(churn.stored(later), Some(whole));
        }
    }
}
