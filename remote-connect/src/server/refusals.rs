//! Refused connections, logged at most once per [`INTERVAL`] per cause, with a count: a
//! client that opens thousands of connections a second must not turn into thousands of log
//! lines a second.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The least time between two log lines of one cause.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

/// Why a connection was closed before it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The peer is outside the allowed networks (`allow`).
    NotAllowed,
    /// The server already holds `max_connections`.
    TooManyConnections,
    /// The peer did not start HTTP/2 (or TLS) within `handshake_timeout`.
    NoHandshake,
    /// Accepting failed for want of file descriptors (or memory); accepting pauses.
    AcceptFailed,
}

impl Cause {
    const ALL: usize = 4;

    fn index(self) -> usize {
        self as usize
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
    /// Refusals since the last line.
    unlogged: u64,
    last_line: Option<Instant>,
}

/// The refusals of one server.
pub(crate) struct Refusals {
    /// The task served, for the log.
    task: std::sync::Arc<str>,
    tallies: [Tally; Cause::ALL],
}

impl Refusals {
    pub(crate) fn new(task: std::sync::Arc<str>) -> Self {
        Self {
            task,
            tallies: [Tally::default(); Cause::ALL],
        }
    }

    /// Counts one refusal of `peer` (when known) for `cause`; logs a line with the count when
    /// the cause's last line is older than [`INTERVAL`].
    pub(crate) fn note(&mut self, cause: Cause, peer: Option<SocketAddr>, now: Instant) {
        let tally = &mut self.tallies[cause.index()];
        tally.unlogged += 1;
        if tally
            .last_line
            .is_some_and(|at| now.duration_since(at) < INTERVAL)
        {
            return;
        }
        let refused = std::mem::take(&mut tally.unlogged);
        let since = tally
            .last_line
            .map_or(String::new(), |at| format!(" in the last {:?}", now - at));
        tally.last_line = Some(now);
        let peer = peer.map(|p| p.to_string()).unwrap_or_default();
        tracing::warn!(
            task = %self.task,
            refused,
            latest_peer = %peer,
            reason = cause.reason(),
            "closed {refused} connection(s) at accept{since}; further ones for this reason are \
             counted and logged at most every {INTERVAL:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_logged_once_per_interval_and_the_rest_counted() {
        let mut refusals = Refusals::new("/job:worker/replica:0/task:0".into());
        let start = Instant::now();
        refusals.note(Cause::NotAllowed, None, start);
        assert_eq!(refusals.tallies[0].unlogged, 0, "the first one is logged");
        for i in 1..=4999 {
            refusals.note(Cause::NotAllowed, None, start + Duration::from_micros(i));
        }
        assert_eq!(refusals.tallies[0].unlogged, 4999);
        // Another cause has its own interval.
        refusals.note(Cause::NoHandshake, None, start);
        assert_eq!(refusals.tallies[2].unlogged, 0);
        // Past the interval the next one logs the count.
        refusals.note(Cause::NotAllowed, None, start + INTERVAL);
        assert_eq!(refusals.tallies[0].unlogged, 0);
    }
}
