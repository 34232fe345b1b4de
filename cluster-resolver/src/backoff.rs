//! Doubling pauses between retries, bounded by a first and a longest pause.

use std::time::Duration;

/// Doubling pauses from `first` up to `max`: quick when the cause is about to clear (a pod
/// about to start, a file half written), and at most one retry per `max` against a source
/// that stays broken.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling, never longer than `max` (nor shorter than `first`).
    pub(crate) fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max: max.max(first),
            next: first,
        }
    }

    /// The next pause, never longer than `remaining` (so waiting ends at a deadline).
    pub(crate) fn pause(&mut self, remaining: Duration) -> Duration {
        let pause = self.next.min(remaining);
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// Starts again from the first pause, after a success.
    #[cfg_attr(not(feature = "watch"), allow(dead_code))]
    pub(crate) fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_never_passes_the_deadline() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        let long = Duration::from_secs(60);
        let pauses: Vec<_> = (0..7).map(|_| b.pause(long).as_millis()).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!(
            b.pause(Duration::from_millis(30)),
            Duration::from_millis(30)
        );
        b.reset();
        assert_eq!(b.pause(long).as_millis(), 250);
    }
}
