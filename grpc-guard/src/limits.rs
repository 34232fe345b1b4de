//! [`Limits`]: what a guarded server gives any one client, and all of them together, before
//! it refuses.

use std::time::Duration;

/// The resources a guarded server ([`Guard`](crate::Guard)) lets its clients hold. The
/// defaults suit a server whose clients keep a few connections each and exchange messages of
/// at most tens of MB; a server sets its own where it knows better (the rendezvous takes
/// 64 KiB requests and keeps fewer connections).
///
/// ```
/// # use std::time::Duration;
/// use grpc_guard::Limits;
///
/// let limits = Limits::default()
///     .with_max_connections(100)
///     .with_idle_timeout(Some(Duration::from_secs(300)));
/// assert_eq!(limits.max_connections(), 100);
/// ```
///
/// Neither tonic's server nor TensorFlow's sets any of these: their streams, connections and
/// buffered requests and responses are unbounded, an idle connection is never closed, and a
/// response is held for a peer that never reads it for as long as the connection lives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    max_streams_per_connection: u32,
    max_reset_streams: usize,
    message_timeout: Duration,
    max_connections: usize,
    handshake_timeout: Duration,
    idle_timeout: Option<Duration>,
    keepalive_interval: Option<Duration>,
    keepalive_timeout: Duration,
    request_memory: usize,
    response_memory: usize,
}

impl Default for Limits {
    /// 256 streams per connection, GOAWAY after 1,024 resets, 60 s per message, 10,000
    /// connections, a 5 s handshake, 10 minutes idle, a ping every 60 s answered within 20 s,
    /// 128 MiB of requests and 128 MiB of responses in flight.
    fn default() -> Self {
        Self {
            max_streams_per_connection: 256,
            max_reset_streams: 1024,
            message_timeout: Duration::from_secs(60),
            max_connections: 10_000,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Some(Duration::from_secs(600)),
            keepalive_interval: Some(Duration::from_secs(60)),
            keepalive_timeout: Duration::from_secs(20),
            request_memory: 128 << 20,
            response_memory: 128 << 20,
        }
    }
}

impl Limits {
    /// Concurrent streams (requests) on one connection, announced in HTTP/2's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; a stream past it is refused (`REFUSED_STREAM`).
    /// Default 256.
    pub fn with_max_streams_per_connection(mut self, max_streams_per_connection: u32) -> Self {
        self.max_streams_per_connection = max_streams_per_connection;
        self
    }

    /// Streams one connection may make the server reset (refused, malformed) before it is
    /// closed with `GOAWAY` (`ENHANCE_YOUR_CALM`): the answer to HTTP/2 rapid reset.
    /// Default 1,024.
    pub fn with_max_reset_streams(mut self, max_reset_streams: usize) -> Self {
        self.max_reset_streams = max_reset_streams;
        self
    }

    /// How long a request may take to arrive whole, from its headers to its last byte (past
    /// it the request fails with `DEADLINE_EXCEEDED`), and how long a response may take to be
    /// taken by the connection once the service has it (past it its stream is reset and what
    /// it held freed). Default 60 s.
    pub fn with_message_timeout(mut self, message_timeout: Duration) -> Self {
        self.message_timeout = message_timeout;
        self
    }

    /// Open connections. At the limit a new connection takes the place of the oldest one
    /// that has not started HTTP/2 yet (see [`with_handshake_timeout`](Self::with_handshake_timeout)),
    /// or is closed as soon as it is accepted, told why in a `GOAWAY`. Never more than the
    /// process's open-file limit less 64, so accepting never fails for want of a descriptor.
    /// Default 10,000.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// How long a new connection has to send the start of HTTP/2 (its preface and first
    /// frame header) or of TLS; it is closed past it. Default 5 s.
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> Self {
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// How long a connection may stay open with no request in flight; `None` never closes
    /// one. A client's gRPC channel reconnects on its next call. Default 10 minutes.
    pub fn with_idle_timeout(mut self, idle_timeout: Option<Duration>) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// How often the server pings a connection (HTTP/2 `PING`) to find peers that are gone;
    /// one that does not answer within [`with_keepalive_timeout`](Self::with_keepalive_timeout) is
    /// closed. `None` sends no pings. Default 60 s.
    pub fn with_keepalive_interval(mut self, keepalive_interval: Option<Duration>) -> Self {
        self.keepalive_interval = keepalive_interval;
        self
    }

    /// How long a keep-alive ping may go unanswered. Default 20 s.
    pub fn with_keepalive_timeout(mut self, keepalive_timeout: Duration) -> Self {
        self.keepalive_timeout = keepalive_timeout;
        self
    }

    /// Bytes the server may hold for requests being received and decoded, all connections
    /// together: what has arrived of each request, inflated when it was compressed, and what
    /// decoding it makes. A request that would go past it fails with `RESOURCE_EXHAUSTED`.
    /// Default 128 MiB.
    pub fn with_request_memory(mut self, request_memory: usize) -> Self {
        self.request_memory = request_memory;
        self
    }

    /// Bytes of responses the server may hold that their connections have not taken yet, all
    /// connections together. A response that would go past it fails with
    /// `RESOURCE_EXHAUSTED` instead of being sent. Default 128 MiB.
    pub fn with_response_memory(mut self, response_memory: usize) -> Self {
        self.response_memory = response_memory;
        self
    }

    /// See [`with_max_streams_per_connection`](Self::with_max_streams_per_connection).
    pub fn max_streams_per_connection(&self) -> u32 {
        self.max_streams_per_connection
    }

    /// See [`with_max_reset_streams`](Self::with_max_reset_streams).
    pub fn max_reset_streams(&self) -> usize {
        self.max_reset_streams
    }

    /// See [`with_message_timeout`](Self::with_message_timeout).
    pub fn message_timeout(&self) -> Duration {
        self.message_timeout
    }

    /// See [`with_max_connections`](Self::with_max_connections).
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// See [`with_handshake_timeout`](Self::with_handshake_timeout).
    pub fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
    }

    /// See [`with_idle_timeout`](Self::with_idle_timeout).
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// See [`with_keepalive_interval`](Self::with_keepalive_interval).
    pub fn keepalive_interval(&self) -> Option<Duration> {
        self.keepalive_interval
    }

    /// See [`with_keepalive_timeout`](Self::with_keepalive_timeout).
    pub fn keepalive_timeout(&self) -> Duration {
        self.keepalive_timeout
    }

    /// See [`with_request_memory`](Self::with_request_memory).
    pub fn request_memory(&self) -> usize {
        self.request_memory
    }

    /// See [`with_response_memory`](Self::with_response_memory).
    pub fn response_memory(&self) -> usize {
        self.response_memory
    }
}
