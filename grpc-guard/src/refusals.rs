//! Refused connections, logged at most once per [`INTERVAL`] per cause, with a count: a
//! client that opens thousands of connections a second must not turn into thousands of log
//! lines a second. The first refusal of a cause is logged at once; those after it within the
//! interval are counted and logged together when it ends. Each is also counted at once into
//! the server's [`GuardMetrics`], whatever the log does.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::metrics::GuardMetrics;

/// The least time between two log lines of one cause.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

/// Why a connection was closed before it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The peer is outside the allowed networks (`allow`).
    NotAllowed,
    /// The server already holds `max_connections`.
    TooManyConnections,
    /// The peer did not start HTTP/2 (or TLS) within `handshake_timeout`, or was the oldest
    /// not to have started when a new connection needed its place.
    NoHandshake,
    /// Accepting failed for want of file descriptors (or memory); accepting pauses.
    AcceptFailed,
}

impl Cause {
    const ALL: [Self; 4] = [
        Self::NotAllowed,
        Self::TooManyConnections,
        Self::NoHandshake,
        Self::AcceptFailed,
    ];

    /// The limit that refused, as `PREFIX_refusals_total` labels it.
    fn limit(self) -> &'static str {
        match self {
            Self::NotAllowed => "not_allowed",
            Self::TooManyConnections => "max_connections",
            Self::NoHandshake => "handshake_timeout",
            Self::AcceptFailed => "accept_failed",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Self::NotAllowed => "the peer is outside the allowed networks",
            Self::TooManyConnections => "the server holds its max_connections already",
            Self::NoHandshake => "the peer did not start HTTP/2 or TLS within handshake_timeout",
            Self::AcceptFailed => "accepting failed (out of file descriptors?); accepting paused",
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Tally {
    /// Refusals not logged yet.
    unlogged: u64,
    /// The peer of the latest of them, when known.
    latest: Option<SocketAddr>,
    last_line: Option<Instant>,
}

/// The refusals of one server.
pub(crate) struct Refusals {
    /// The server (a TaskServer's task, the rendezvous's address), for the log.
    server: std::sync::Arc<str>,
    tallies: [Tally; Cause::ALL.len()],
    /// When the counted refusals are due to be logged.
    flush: Option<Pin<Box<Sleep>>>,
    metrics: GuardMetrics,
}

impl Refusals {
    pub(crate) fn new(server: std::sync::Arc<str>, metrics: GuardMetrics) -> Self {
        Self {
            server,
            tallies: [Tally::default(); Cause::ALL.len()],
            flush: None,
            metrics,
        }
    }

    /// Counts one refusal of `peer` (when known) for `cause`; logs it at once when the cause's
    /// last line is older than [`INTERVAL`].
    pub(crate) fn note(&mut self, cause: Cause, peer: Option<SocketAddr>) {
        self.metrics.refused(cause.limit());
        let tally = &mut self.tallies[cause as usize];
        tally.unlogged += 1;
        tally.latest = peer.or(tally.latest);
        let now = Instant::now();
        if tally.last_line.is_none_or(|at| now - at >= INTERVAL) {
            self.log(cause, now);
        }
    }

    /// Logs the refusals counted since the last lines whose interval has ended, and arms the
    /// wake-up for those whose has not.
    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>) {
        loop {
            let now = Instant::now();
            let mut next = None::<Instant>;
            for cause in Cause::ALL {
                let tally = self.tallies[cause as usize];
                let (true, Some(at)) = (tally.unlogged > 0, tally.last_line) else {
                    continue;
                };
                if now - at >= INTERVAL {
                    self.log(cause, now);
                } else {
                    next = Some(next.map_or(at + INTERVAL, |n| n.min(at + INTERVAL)));
                }
            }
            let Some(next) = next else {
                self.flush = None;
                return;
            };
            let flush = self
                .flush
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(next)));
            flush.as_mut().reset(next);
            if flush.as_mut().poll(cx).is_pending() {
                return;
            }
        }
    }

    fn log(&mut self, cause: Cause, now: Instant) {
        let tally = &mut self.tallies[cause as usize];
        let refused = std::mem::take(&mut tally.unlogged);
        let latest_peer = tally
            .latest
            .take()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let since = tally
            .last_line
            .map_or(String::new(), |at| format!(" in the last {:.0?}", now - at));
        tally.last_line = Some(now);
        tracing::warn!(
            server = %self.server,
            refused,
            %latest_peer,
            reason = cause.reason(),
            "closed {refused} connection(s) at accept{since}; more for this reason are counted \
             and logged at most every {INTERVAL:?}"
        );
    }

    /// Refusals of `cause` counted and not logged yet.
    #[cfg(test)]
    fn unlogged(&self, cause: Cause) -> u64 {
        self.tallies[cause as usize].unlogged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_cause_is_logged_once_per_interval_and_the_rest_counted_then_flushed() {
        let metrics = GuardMetrics::default();
        let mut refusals = Refusals::new("/job:worker/replica:0/task:0".into(), metrics.clone());
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        refusals.note(Cause::NotAllowed, None);
        assert_eq!(
            refusals.unlogged(Cause::NotAllowed),
            0,
            "the first one is logged"
        );
        for _ in 0..4999 {
            refusals.note(Cause::NotAllowed, None);
        }
        assert_eq!(refusals.unlogged(Cause::NotAllowed), 4999);
        // Another cause has its own interval.
        refusals.note(Cause::NoHandshake, None);
        assert_eq!(refusals.unlogged(Cause::NoHandshake), 0);
        refusals.poll_flush(&mut cx);
        tokio::time::advance(INTERVAL - Duration::from_millis(1)).await;
        refusals.poll_flush(&mut cx);
        assert_eq!(
            refusals.unlogged(Cause::NotAllowed),
            4999,
            "not before the interval"
        );
        // Once it ends, the count is logged without waiting for another refusal.
        tokio::time::advance(Duration::from_millis(1)).await;
        refusals.poll_flush(&mut cx);
        assert_eq!(refusals.unlogged(Cause::NotAllowed), 0);
        assert!(refusals.flush.is_none(), "nothing left to flush");
        // The metrics count every refusal at once, logged or not.
        assert_eq!(metrics.refusals("not_allowed"), 5000);
        assert_eq!(metrics.refusals("handshake_timeout"), 1);
    }
}
