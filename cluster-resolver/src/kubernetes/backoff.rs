//! The pause between two listings while waiting for pods to run.

use std::time::Duration;

/// Doubling pauses from [`Backoff::FIRST`] up to [`Backoff::MAX`]: quick when a pod is about
/// to start, and at most one listing per few seconds against the API server when it is not.
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The first pause.
    pub(super) const FIRST: Duration = Duration::from_millis(250);
    /// The longest pause.
    pub(super) const MAX: Duration = Duration::from_secs(5);

    pub(super) fn new() -> Self {
        Self { next: Self::FIRST }
    }

    /// The next pause, never longer than `remaining` (so waiting ends at the deadline).
    pub(super) fn pause(&mut self, remaining: Duration) -> Duration {
        let pause = self.next.min(remaining);
        self.next = (self.next * 2).min(Self::MAX);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_never_passes_the_deadline() {
        let mut b = Backoff::new();
        let long = Duration::from_secs(60);
        let pauses: Vec<_> = (0..7).map(|_| b.pause(long).as_millis()).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!(
            b.pause(Duration::from_millis(30)),
            Duration::from_millis(30)
        );
    }
}
