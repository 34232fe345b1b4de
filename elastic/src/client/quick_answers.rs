//! [`QuickAnswers`]: the pause after a long poll that came back far sooner than it asked,
//! so a rendezvous that answers at once (a bug, another version, a hostile one) gets a few
//! calls a second, not thousands.

use std::time::Duration;

use cluster_resolver::Backoff;

/// The first pause after a quick answer, doubling up to [`LONGEST`].
const FIRST: Duration = Duration::from_millis(50);
const LONGEST: Duration = Duration::from_secs(1);

/// The most a quick answer takes: a rendezvous that holds polls for longer than this (its
/// own cap, a third of its heartbeat timeout, may be far below what the client asks) gets
/// at most 20 calls a second anyway, and a round is never held back behind a pause.
const QUICK: Duration = Duration::from_millis(50);

/// Pacing of one caller's long polls (a node's waits, a round's heartbeats, an observer's
/// watch). An answer within a tenth of the poll it asked for, and within 50 ms, is quick:
/// the next call waits
/// 50 ms, then 100 ms, … up to 1 s while the answers stay quick and unchanged; a real change
/// starts again from 50 ms. Against a rendezvous that answers every poll at once with the
/// same thing, calls over 5 s number about a dozen (50 + 100 + … + 1000 ms, then one a second).
#[derive(Debug, Clone)]
pub(crate) struct QuickAnswers {
    backoff: Backoff,
}

impl Default for QuickAnswers {
    fn default() -> Self {
        Self {
            backoff: Backoff::new(FIRST, LONGEST),
        }
    }
}

impl QuickAnswers {
    /// How long to wait before the next call, after one that asked to be held for `asked`
    /// and answered after `took`, `changed` when its answer differs from the one before;
    /// never past `remaining`.
    pub(crate) fn pause(
        &mut self,
        asked: Duration,
        took: Duration,
        changed: bool,
        remaining: Duration,
    ) -> Duration {
        if changed {
            self.backoff.reset();
        }
        if took >= (asked / 10).min(QUICK) {
            return Duration::ZERO;
        }
        self.backoff.pause(remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_answers_wait_longer_each_time_until_a_change() {
        let mut q = QuickAnswers::default();
        let (poll, quick, long) = (
            Duration::from_secs(10),
            Duration::from_millis(1),
            Duration::MAX,
        );
        let pauses: Vec<u128> = (0..7)
            .map(|_| q.pause(poll, quick, false, long).as_millis())
            .collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1000, 1000]);
        // A held poll goes on at once, one held by a server's cap (far below the poll) too;
        // a change starts again from the first pause.
        assert_eq!(q.pause(poll, poll, false, long), Duration::ZERO);
        let capped = Duration::from_millis(100);
        assert_eq!(q.pause(poll, capped, false, long), Duration::ZERO);
        assert_eq!(q.pause(poll, quick, true, long).as_millis(), 50);
        assert_eq!(
            q.pause(poll, quick, false, Duration::from_millis(7))
                .as_millis(),
            7
        );
    }
}
