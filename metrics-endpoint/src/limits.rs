//! The bounds of the metrics port: how many connections, how long a request may take to
//! arrive, how large it may be, how long an answer may take.

use std::time::Duration;

/// The bounds [`crate::MetricsEndpoint`] serves under. The defaults suit a port that only
/// Prometheus and a health checker call, a few times a minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    max_connections: usize,
    header_timeout: Duration,
    max_request_bytes: usize,
    response_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 32,
            header_timeout: Duration::from_secs(5),
            // hyper's smallest read buffer: a GET's line and headers, never a body.
            max_request_bytes: 8192,
            response_deadline: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// At most this many connections at once (at least 1); a new one past the cap closes the
    /// oldest one still waiting for its request (or is closed itself when every one is being
    /// answered), so idle connections cannot keep a scrape out. Default 32.
    #[must_use]
    pub fn with_max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// A request's line and headers must have arrived within this. Default 5 s.
    #[must_use]
    pub fn with_header_timeout(mut self, t: Duration) -> Self {
        self.header_timeout = t;
        self
    }

    /// A request's line and headers may hold at most this many bytes (hyper's floor is
    /// 8,192). Default 8,192.
    #[must_use]
    pub fn with_max_request_bytes(mut self, n: usize) -> Self {
        self.max_request_bytes = n.max(8192);
        self
    }

    /// A connection is closed this long after it was accepted, answered or not. Default 10 s.
    #[must_use]
    pub fn with_response_deadline(mut self, t: Duration) -> Self {
        self.response_deadline = t;
        self
    }

    /// The connection cap.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// The time a request's headers may take.
    pub fn header_timeout(&self) -> Duration {
        self.header_timeout
    }

    /// The largest request head, in bytes.
    pub fn max_request_bytes(&self) -> usize {
        self.max_request_bytes
    }

    /// The time a connection may live.
    pub fn response_deadline(&self) -> Duration {
        self.response_deadline
    }
}
