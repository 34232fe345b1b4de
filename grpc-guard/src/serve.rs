//! [`Guard`]: a tonic server facing the network with every guard of this crate, and
//! [`Serving`], the handle of one that serves.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::service::Routes;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::access::Access;
use crate::admission::{Admission, Rules};
use crate::connection::{CountStreams, OpenConnections};
use crate::delivery::Responses;
use crate::limits::Limits;
use crate::metrics::GuardMetrics;
use crate::request_memory::RequestMemory;
use crate::whole_messages::Guarded;

/// How long [`Serving::shutdown_within`] waits for aborted connections to be dropped.
const ABORT_WAIT: Duration = Duration::from_secs(1);

/// Descriptors the process keeps for itself below its open-file limit.
const RESERVED_DESCRIPTORS: u64 = 64;

/// How a server faces the network: its [`Limits`] and [`Access`] (allow list and TLS). Build one, wrap each
/// service with [`service`](Self::service), then [`serve`](Self::serve) the routes on a bound
/// listener.
///
/// ```
/// use grpc_guard::{Access, Guard, Limits};
/// use tonic::service::Routes;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let guard = Guard::new("example", "example server", Limits::default())
///     .with_access(Access::default().with_allow(["127.0.0.0/8".parse()?]));
/// // Routes::new(guard.service(MyServer::new(..), 64 * 1024)) in a real server.
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let serving = guard.serve(listener, Routes::default())?;
/// assert_eq!(serving.open_connections(), 0);
/// serving.shutdown_within(std::time::Duration::ZERO).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a guard does nothing until it serves"]
pub struct Guard {
    kind: &'static str,
    name: Arc<str>,
    limits: Limits,
    access: Access,
    request_memory: RequestMemory,
    call_timeout: Option<Duration>,
    tcp_keepalive: Option<Duration>,
    metrics: GuardMetrics,
}

impl Guard {
    /// The guard of a server of kind `kind` (`TaskServer`, `rendezvous`: what a refused
    /// peer is told it reached) named `name` in the logs (its task, its address), under
    /// `limits`.
    pub fn new(kind: &'static str, name: impl Into<Arc<str>>, limits: Limits) -> Self {
        Self {
            kind,
            name: name.into(),
            request_memory: RequestMemory::new(limits.request_memory()),
            limits,
            access: Access::default(),
            call_timeout: None,
            tcp_keepalive: None,
            metrics: GuardMetrics::default(),
        }
    }

    /// Count the server's open connections and its refusals into `metrics`
    /// ([`GuardMetrics`]): connections refused at accept, and calls refused for want of
    /// request or response memory. Give it before [`service`](Self::service) wraps the
    /// services. Default: counted into metrics no registry holds.
    pub fn with_metrics(mut self, metrics: GuardMetrics) -> Self {
        self.request_memory = self.request_memory.counted_by(metrics.clone());
        self.metrics = metrics;
        self
    }

    /// Who may connect, and over what ([`Access`]: the allow list and TLS). Default: every
    /// peer, plaintext.
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Bound every call's handling (until its response headers) by `timeout`: tonic's
    /// `Server::timeout`, answered `CANCELLED`. Default: none (the message timeouts still
    /// bound what the peer takes).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// TCP keep-alive probes on every accepted connection after `idle` without traffic.
    /// Default: none (HTTP/2 pings find gone peers, [`Limits::with_keepalive_interval`]).
    pub fn with_tcp_keepalive(mut self, idle: Duration) -> Self {
        self.tcp_keepalive = Some(idle);
        self
    }

    /// The limits served under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The server's request memory, for services that charge what decoding a request holds
    /// beyond its bytes.
    pub fn request_memory(&self) -> &RequestMemory {
        &self.request_memory
    }

    /// `service` with its requests guarded: each reaches it one whole message at a time,
    /// charged to the request memory, due within the message timeout, and refused with
    /// `OUT_OF_RANGE` at the header of a message longer than `max_message_size` (give the
    /// service's own decode limit).
    pub fn service<S>(&self, service: S, max_message_size: usize) -> Guarded<S> {
        Guarded::new(
            service,
            self.request_memory.clone(),
            self.limits.message_timeout(),
            max_message_size,
        )
    }

    /// Serves `routes` (services wrapped by [`service`](Self::service)) on `listener` until
    /// the returned [`Serving`] is shut down or dropped, with every guard: the allow list, the
    /// connection cap (at most the open-file limit less 64), handshake and idle timeouts,
    /// streams per connection, `GOAWAY` after too many reset streams, keep-alive pings, TLS,
    /// and each response delivered under the response memory and message timeout. Needs a
    /// tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ServeError::Tls`] when tonic refuses the TLS config, [`ServeError::Listener`] when
    /// the listener's address cannot be read.
    pub fn serve(self, listener: TcpListener, routes: Routes) -> Result<Serving, ServeError> {
        let local_addr = listener.local_addr().map_err(ServeError::Listener)?;
        let limits = &self.limits;
        let connections = OpenConnections::default();
        // Sockets accepted from our own listener get no TCP_NODELAY from tonic; without it
        // every small response waits ~40 ms for the peer's delayed ACK.
        let incoming = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(self.tcp_keepalive);
        let tls = self.access.serves_tls();
        let incoming = Admission::new(
            incoming,
            Rules {
                kind: self.kind,
                allowed: self.access.allowed(),
                max_connections: limits.max_connections().min(descriptors_for_connections()),
                handshake_timeout: limits.handshake_timeout(),
                idle_timeout: limits.idle_timeout(),
                tls,
            },
            connections.clone(),
            self.name.clone(),
            self.metrics.clone(),
        );
        self.metrics.serving(connections.clone());
        let responses = Responses {
            memory: RequestMemory::for_responses(limits.response_memory())
                .counted_by(self.metrics.clone()),
            timeout: limits.message_timeout(),
            server: self.name.clone(),
            log: Arc::default(),
        };
        let count = {
            let responses = responses.clone();
            tower_layer::layer_fn(move |inner| CountStreams {
                inner,
                responses: responses.clone(),
            })
        };
        let mut server = Server::builder()
            .max_concurrent_streams(limits.max_streams_per_connection())
            .http2_max_local_error_reset_streams(Some(limits.max_reset_streams()))
            .http2_keepalive_interval(limits.keepalive_interval())
            .http2_keepalive_timeout(Some(limits.keepalive_timeout()));
        if let Some(timeout) = self.call_timeout {
            server = server.timeout(timeout);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = self.access.tls() {
            server = server.tls_config(tls.server()).map_err(ServeError::Tls)?;
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let serve = tokio::spawn(
            server
                .layer(count)
                .add_routes(routes)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                }),
        );
        Ok(Serving {
            local_addr,
            connections,
            responses: responses.memory,
            requests: self.request_memory,
            stop: Some(stop),
            serve: Some(serve),
        })
    }
}

/// How many connections the process's open-file limit leaves room for: the soft limit less
/// what the rest of the process may need. Past it accepting would fail for want of a
/// descriptor, and a refused connection could no longer be closed and answered.
fn descriptors_for_connections() -> usize {
    match rlimit::Resource::NOFILE.get() {
        Ok((soft, _)) => {
            usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS).max(1)).unwrap_or(usize::MAX)
        }
        Err(_) => usize::MAX,
    }
}

/// A server started by [`Guard::serve`]. Dropping it stops accepting and lets the requests in
/// flight finish, without waiting; [`shutdown_within`](Self::shutdown_within) waits.
#[derive(Debug)]
pub struct Serving {
    local_addr: SocketAddr,
    connections: OpenConnections,
    responses: RequestMemory,
    requests: RequestMemory,
    stop: Option<oneshot::Sender<()>>,
    serve: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

/// A handle on a server's count of open connections, still readable once its [`Serving`]
/// moved elsewhere (a metrics gauge reads it at each scrape). Clones read the same count.
#[derive(Clone, Debug)]
pub struct ConnectionCount(OpenConnections);

impl ConnectionCount {
    /// How many connections the server holds open now ([`Serving::open_connections`]).
    pub fn get(&self) -> usize {
        self.0.count()
    }
}

impl Serving {
    /// A handle on [`open_connections`](Self::open_connections) that outlives this borrow.
    pub fn connection_count(&self) -> ConnectionCount {
        ConnectionCount(self.connections.clone())
    }

    /// The address served on (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// How many connections the server holds open: admitted ones, and ones still waiting for
    /// their first bytes ([`Limits::with_max_connections`] counts these).
    pub fn open_connections(&self) -> usize {
        self.connections.count()
    }

    /// Bytes of responses the connections have not taken yet
    /// ([`Limits::with_response_memory`] bounds it).
    pub fn response_memory_in_use(&self) -> usize {
        self.responses.in_use()
    }

    /// Bytes held for requests being received and decoded
    /// ([`Limits::with_request_memory`] bounds it).
    pub fn request_memory_in_use(&self) -> usize {
        self.requests.in_use()
    }

    /// Stops accepting connections (the port is closed at once) and lets the requests in
    /// flight finish; does not wait.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Makes every connection's reads and writes fail, now and later, so that they close
    /// with whatever they had in flight.
    pub fn abort_all(&self) {
        self.connections.abort_all();
    }

    /// [`stop`](Self::stop)s, lets the requests in flight finish for up to `grace`, then
    /// closes the connections still open, and returns once every connection is closed:
    /// within about `grace` + 1 s whatever the clients do (`Duration::ZERO` closes every
    /// connection at once).
    ///
    /// # Errors
    ///
    /// The server's error, if it had failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the server stops once the future is first polled (or dropped, as any
    /// `Serving`), and a dropped future only stops the waiting: the connections are then
    /// closed by their clients or their idle timeout, not at the end of the grace.
    pub async fn shutdown_within(mut self, grace: Duration) -> Result<(), tonic::transport::Error> {
        self.stop();
        let Some(mut serve) = self.serve.take() else {
            return Ok(());
        };
        let joined = match tokio::time::timeout(grace, &mut serve).await {
            Ok(joined) => joined,
            Err(_) => {
                tracing::debug!(?grace, "grace period over, closing the connections left");
                self.connections.abort_all();
                match tokio::time::timeout(ABORT_WAIT, &mut serve).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        // Not seen: every connection's I/O now fails. Stop waiting anyway.
                        serve.abort();
                        return Ok(());
                    }
                }
            }
        };
        match joined {
            Ok(result) => result,
            // The serving task panicked or was cancelled: nothing is served any more.
            Err(_) => Ok(()),
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Why a [`Guard`] could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// tonic refused the TLS config.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    #[error("cannot set up TLS")]
    Tls(#[source] tonic::transport::Error),
    /// The listener's local address cannot be read.
    #[error("cannot read the listener's address")]
    Listener(#[source] std::io::Error),
}
