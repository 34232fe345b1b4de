//! [`Limits`]: what one [`TaskServer`](crate::TaskServer) gives any one client, and all of
//! them together, before it refuses.

use std::time::Duration;

/// TensorFlow's gRPC message size limit on both sides (`INT32_MAX`); tonic's default is 4 MiB.
pub(crate) const MAX_MESSAGE_SIZE: usize = i32::MAX as usize;

/// The resources a [`TaskServer`](crate::TaskServer) lets its clients hold. The defaults are
/// far above what a TensorFlow client uses (a connect opens one connection per task and a
/// handful of streams on it, and sends a `CreateContext` of about 8 MB for a 10,000-task
/// cluster of 8 devices each), and far below what exhausts a server: under every default
/// together, a server stays within a few hundred MB however its clients behave.
///
/// Set with [`TaskServerBuilder::with_limits`](crate::TaskServerBuilder::with_limits):
///
/// ```
/// # use std::time::Duration;
/// use remote_connect::Limits;
///
/// let limits = Limits::default()
///     .with_max_connections(100)
///     .with_context_idle_limit(Some(Duration::from_secs(3600)));
/// ```
///
/// The connection, stream, message and memory limits are those of the `grpc-guard` crate,
/// which elastic's rendezvous serves under too; the contexts' are the TaskServer's own.
///
/// TensorFlow's gRPC server sets none of these: its streams, connections, contexts and
/// decoded requests are unbounded, it never closes an idle connection, and it waits 120 s for
/// a connection's handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// What every guarded server limits: connections, streams, messages, memory.
    serving: grpc_guard::Limits,
    /// See [`with_max_contexts`](Self::with_max_contexts).
    pub(crate) max_contexts: usize,
    /// See [`with_context_memory`](Self::with_context_memory).
    pub(crate) context_memory: usize,
    /// See [`with_context_idle_limit`](Self::with_context_idle_limit).
    pub(crate) context_idle_limit: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            serving: grpc_guard::Limits::default(),
            max_contexts: 10_000,
            context_memory: 128 << 20,
            context_idle_limit: None,
        }
    }
}

/// Setters that set the shared limit of the same name ([`grpc_guard::Limits`]).
macro_rules! serving_setters {
    ($($(#[$doc:meta])* $name:ident($value:ident: $ty:ty);)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $value: $ty) -> Self {
            self.serving = self.serving.$name($value);
            self
        }
    )*};
}

impl Limits {
    serving_setters! {
        /// Concurrent streams on one connection, as
        /// [`grpc_guard::Limits::with_max_streams_per_connection`]. Default 256.
        with_max_streams_per_connection(max_streams_per_connection: u32);
        /// Streams a connection may make the server reset before `GOAWAY`, as
        /// [`grpc_guard::Limits::with_max_reset_streams`]. Default 1,024.
        with_max_reset_streams(max_reset_streams: usize);
        /// How long a request may take to arrive whole and a response to be taken, as
        /// [`grpc_guard::Limits::with_message_timeout`]. Default 60 s.
        with_message_timeout(message_timeout: Duration);
        /// Open connections (never more than the open-file limit less 64), as
        /// [`grpc_guard::Limits::with_max_connections`]. Default 10,000.
        with_max_connections(max_connections: usize);
        /// How long a new connection has to start HTTP/2 or TLS, as
        /// [`grpc_guard::Limits::with_handshake_timeout`]. Default 5 s.
        with_handshake_timeout(handshake_timeout: Duration);
        /// How long a connection may stay open with no request in flight (`None`: forever), as
        /// [`grpc_guard::Limits::with_idle_timeout`]. Default 10 minutes.
        with_idle_timeout(idle_timeout: Option<Duration>);
        /// How often connections are pinged (`None`: never), as
        /// [`grpc_guard::Limits::with_keepalive_interval`]. Default 60 s.
        with_keepalive_interval(keepalive_interval: Option<Duration>);
        /// How long a ping may go unanswered, as
        /// [`grpc_guard::Limits::with_keepalive_timeout`]. Default 20 s.
        with_keepalive_timeout(keepalive_timeout: Duration);
        /// Bytes held for requests being received and decoded, all connections together (a
        /// `CreateContext`'s device list costs per device, not per byte), as
        /// [`grpc_guard::Limits::with_request_memory`]. Default 128 MiB.
        with_request_memory(request_memory: usize);
        /// Bytes of responses not yet taken by their connections, all together, as
        /// [`grpc_guard::Limits::with_response_memory`]. Default 128 MiB.
        with_response_memory(response_memory: usize);
    }

    /// The shared limits: connections, streams, messages, memory.
    pub(crate) fn serving(&self) -> &grpc_guard::Limits {
        &self.serving
    }

    /// Live remote contexts. A new context past it takes the place of the least recently
    /// used context without keep-alive (which TensorFlow would keep forever); when every
    /// context has a keep-alive, it fails with `RESOURCE_EXHAUSTED`. Default 10,000.
    pub fn with_max_contexts(mut self, max_contexts: usize) -> Self {
        self.max_contexts = max_contexts;
        self
    }

    /// Bytes the live contexts may hold together (the names of the devices each was given),
    /// made room for as [`with_max_contexts`](Self::with_max_contexts) is; a `CreateContext` or
    /// `UpdateContext` that still does not fit fails with `RESOURCE_EXHAUSTED`.
    /// Default 128 MiB.
    pub fn with_context_memory(mut self, context_memory: usize) -> Self {
        self.context_memory = context_memory;
        self
    }

    /// How long a context created without keep-alive (`keep_alive_secs` 0, which TensorFlow
    /// keeps until it is closed) may go without a request before it is collected; `None`
    /// keeps it until it is closed, as TensorFlow. Contexts with a keep-alive are collected
    /// after it, as TensorFlow. Default `None`.
    pub fn with_context_idle_limit(mut self, context_idle_limit: Option<Duration>) -> Self {
        self.context_idle_limit = context_idle_limit;
        self
    }
}
