//! [`Throttled`]: an event a peer can make the server repeat at will (a response refused or
//! cut) logged at most once per [`INTERVAL`], the line saying how many happened since the
//! last: a peer that makes the server refuse thousands of responses a second must not turn into
//! thousands of log lines a second. Unlike connection refusals ([`crate::refusals`]), no timer
//! flushes the count: the next line carries it.

use std::sync::Mutex;

use tokio::time::Instant;

pub(crate) use crate::refusals::INTERVAL;

/// The events of one kind, counted between log lines.
#[derive(Debug, Default)]
pub(crate) struct Throttled {
    /// Events since the last line, and when that line was.
    state: Mutex<(u64, Option<Instant>)>,
}

impl Throttled {
    /// Counts one event. `Some(n)` when it is to be logged now, `n` the events since the last
    /// line, this one included; `None` while the last line is younger than [`INTERVAL`].
    pub(crate) fn note(&self) -> Option<u64> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 += 1;
        let now = Instant::now();
        if state.1.is_some_and(|at| now - at < INTERVAL) {
            return None;
        }
        state.1 = Some(now);
        Some(std::mem::take(&mut state.0))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn logs_the_first_then_once_an_interval_with_the_count() {
        let throttled = Throttled::default();
        assert_eq!(throttled.note(), Some(1));
        for _ in 0..999 {
            assert_eq!(throttled.note(), None);
        }
        tokio::time::advance(INTERVAL + Duration::from_millis(1)).await;
        assert_eq!(throttled.note(), Some(1000));
        assert_eq!(throttled.note(), None);
    }
}
