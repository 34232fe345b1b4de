//! Doubling pauses between retries, bounded by a first and a longest pause.

use std::time::Duration;

/// Doubling pauses from `first` up to `max`: quick when the cause is about to clear (a pod
/// about to start, a file half written), and at most one retry per `max` against a source
/// that stays broken. The resolvers' waits and watches retry with it, and so does
/// remote-connect's `Follow`.
///
/// ```
/// use cluster_resolver::Backoff;
/// use std::time::Duration;
///
/// let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
/// let forever = Duration::MAX;
/// assert_eq!(backoff.pause(forever), Duration::from_millis(100));
/// assert_eq!(backoff.pause(forever), Duration::from_millis(200));
/// assert_eq!(backoff.pause(forever), Duration::from_millis(300));
/// backoff.reset();
/// assert_eq!(backoff.pause(forever), Duration::from_millis(100));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling, never longer than `max` (nor shorter than `first`).
    pub fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max: max.max(first),
            next: first,
        }
    }

    /// The next pause, never longer than `remaining` (so waiting ends at a deadline).
    pub fn pause(&mut self, remaining: Duration) -> Duration {
        let pause = self.next.min(remaining);
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// Starts again from the first pause, after a success.
    pub fn reset(&mut self) {
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
