//! [`RendezvousServer`]: the rendezvous service, in process, on a port of its own: the
//! memory store's rendezvous served over gRPC, facing the network through grpc-guard (an
//! allow list, a connection cap, handshake and idle timeouts, request and response memory,
//! message timeouts, mTLS).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use grpc_guard::{Access, Guard, Limits, Serving};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::service::Routes;

use super::service::Service;
use crate::proto::rendezvous_server::RendezvousServer as RendezvousService;
use crate::rendezvous::registry::Settings;
use crate::rendezvous::{Local, Memory};
use crate::{Error, Token};

/// The largest request the server decodes. A join of 256 ports with a 253-byte host, or a
/// report with its 8 KiB of stderr, is a few KiB; anything larger is refused
/// (`OUT_OF_RANGE`) before it is decoded.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// The longest a `WaitRound` (or `WatchRounds`) long poll is held. It is also held at most a
/// third of the timeout, so that a node polling is never silent long enough to be declared
/// gone.
const MAX_POLL: Duration = Duration::from_secs(30);

/// How long [`RendezvousServer::shutdown`] lets calls in flight finish before it closes their
/// connections (long polls answer at once).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(4);

/// The rendezvous's port when none is named: torchrun's, the one `tfcluster run --rdzv HOST`
/// dials, and the one a [`RendezvousServer`] binds (on every interface) unless
/// [`with_bind`](RendezvousServerBuilder::with_bind) says otherwise.
pub const RENDEZVOUS_PORT: u16 = 29400;

/// Configures a [`RendezvousServer`] before it starts ([`RendezvousServer::builder`]): where it
/// listens ([`with_bind`](Self::with_bind)), how it times rounds and nodes, what it holds at
/// most, and how it faces the network: who may connect and over what
/// ([`with_access`](Self::with_access): an allow list, mTLS), and the connection, message
/// and memory limits ([`with_limits`](Self::with_limits),
/// [`default_limits`](Self::default_limits)).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until start() is awaited"]
pub struct RendezvousServerBuilder {
    bind: SocketAddr,
    last_call: Duration,
    timeout: Duration,
    max_jobs: usize,
    limits: Limits,
    access: Access,
    token: Option<Token>,
    metrics: crate::RendezvousMetrics,
}

impl Default for RendezvousServerBuilder {
    /// `0.0.0.0:`[`RENDEZVOUS_PORT`], a 3 s last call, a 3 s heartbeat timeout, long polls of up to 30 s
    /// (and a third of the timeout), 1,024 jobs, every peer allowed, plaintext, and
    /// [`default_limits`](Self::default_limits).
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, RENDEZVOUS_PORT)),
            last_call: crate::DEFAULT_LAST_CALL,
            timeout: crate::DEFAULT_TIMEOUT,
            max_jobs: 1024,
            limits: Self::default_limits(),
            access: Access::default(),
            token: None,
            metrics: crate::RendezvousMetrics::default(),
        }
    }
}

impl RendezvousServerBuilder {
    /// Listen on `addr` instead of `0.0.0.0:`[`RENDEZVOUS_PORT`]. Port 0 lets the OS pick a free port, with
    /// no race: [`RendezvousServer::local_addr`] tells which.
    pub fn with_bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// How long a round with at least its minimum nodes waits for another node before it
    /// closes (torchrun's `last_call_timeout`).
    pub fn with_last_call(mut self, last_call: Duration) -> Self {
        self.last_call = last_call;
        self
    }

    /// How long a node may be silent (no heartbeat or other call) before it is declared gone,
    /// which ends its round (`--rdzv-timeout`).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many jobs (rendezvous ids) the server serves at once; a join that would start one
    /// more is refused with `RESOURCE_EXHAUSTED`.
    pub fn with_max_jobs(mut self, max_jobs: usize) -> Self {
        self.max_jobs = max_jobs;
        self
    }

    /// The limits a rendezvous serves under by default: 4,096 connections (and never more
    /// than the open-file limit less 64), 256 streams each, a 5 s handshake, connections
    /// idle 5 minutes closed (an agent always has a heartbeat or wait in flight, so it is
    /// never idle), pings every 10 s answered within 20 s, 60 s for a request to arrive and
    /// for a response to be taken, 16 MiB of requests being received (each at most
    /// [`MAX_REQUEST_BYTES`]) and 32 MiB of responses not yet taken: a response that would go
    /// past it fails with `RESOURCE_EXHAUSTED` rather than be held (a round's answer is a few
    /// hundred KB at most, its TF_CONFIG within Linux's 128 KiB; 48 peers that never read a
    /// round of 65,536 tasks made a server without this limit hold 952 MB).
    pub fn default_limits() -> Limits {
        Limits::default()
            .with_max_connections(4096)
            .with_max_streams_per_connection(256)
            .with_handshake_timeout(Duration::from_secs(5))
            .with_idle_timeout(Some(Duration::from_secs(300)))
            .with_keepalive_interval(Some(Duration::from_secs(10)))
            .with_keepalive_timeout(Duration::from_secs(20))
            .with_message_timeout(Duration::from_secs(60))
            .with_request_memory(16 << 20)
            .with_response_memory(32 << 20)
    }

    /// The connection, stream, message and memory limits (default
    /// [`default_limits`](Self::default_limits)). Requests stay at most
    /// [`MAX_REQUEST_BYTES`] each whatever the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Who may connect and over what ([`Access`]): an allow list (any other peer is closed
    /// at accept, told why in a `GOAWAY`, so its client's error says it is not in the
    /// allowed networks) and, feature `tls`, mTLS (clients dial with
    /// [`ClientOptions::with_tls`](crate::ClientOptions::with_tls)). Default: every peer,
    /// plaintext.
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// The guard of a server on `addr` under these options.
    fn guard(&self, addr: SocketAddr) -> Guard {
        Guard::new("rendezvous", addr.to_string(), self.limits.clone())
            .with_metrics(self.metrics.guard().clone())
            // Every call answers within its poll cap; this bounds anything else.
            .with_call_timeout(self.poll_cap() + Duration::from_secs(10))
            .with_tcp_keepalive(Duration::from_secs(30))
            .with_access(self.access.clone())
    }

    /// The server's own token (`tfcluster rendezvous serve --token-file`): it takes no call,
    /// on any job, without it (`UNAUTHENTICATED`), and each job created here has it as its
    /// token. Without one (the default), each job's first join sets the job's token, or
    /// leaves the job open. Observers need it too.
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// Counts the server's requests, jobs, rounds formed, connections and refusals into `metrics`
    /// ([`RendezvousMetrics::register`](crate::RendezvousMetrics::register)). Default: into
    /// metrics no registry holds.
    pub fn with_metrics(mut self, metrics: crate::RendezvousMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The server's own token, if it has one.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    /// Binds its address (port 0 picks a free port, see
    /// [`RendezvousServer::local_addr`]) and serves. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] when the address cannot be bound, or TLS cannot be set up with the
    /// access's config.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before it returns, nothing serves and the port is let go.
    pub async fn start(self) -> Result<RendezvousServer, Error> {
        let (addr, options) = (self.bind, self);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let (shutdown, _) = watch::channel(false);
        let settings = Settings {
            last_call: options.last_call,
            timeout: options.timeout,
            max_jobs: options.max_jobs,
            token: options.token.clone(),
            metrics: options.metrics.clone(),
        };
        let memory = Memory::new(settings, options.poll_cap(), shutdown.subscribe());

        let ticker = tokio::spawn({
            let memory = memory.clone();
            let mut interval = tokio::time::interval(options.tick());
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            async move {
                loop {
                    interval.tick().await;
                    memory.tick(Instant::now());
                }
            }
        });

        let guard = options.guard(local_addr);
        let service = RendezvousService::new(Service {
            local: Local::new(memory),
            metrics: options.metrics.clone(),
        })
        .max_decoding_message_size(MAX_REQUEST_BYTES);
        let routes = Routes::new(guard.service(service, MAX_REQUEST_BYTES));
        let serving = guard.serve(listener, routes).map_err(|e| {
            ticker.abort();
            Error::Bind {
                addr,
                source: std::io::Error::other(e),
            }
        })?;
        tracing::info!(%local_addr, "rendezvous serving");
        Ok(RendezvousServer {
            shutdown,
            serving: Some(serving),
            ticker,
        })
    }

    fn poll_cap(&self) -> Duration {
        MAX_POLL.min(self.timeout / 3)
    }

    /// The clock's resolution: a tenth of the shorter of last call and timeout, from 5 ms
    /// to 250 ms.
    fn tick(&self) -> Duration {
        (self.last_call.min(self.timeout) / 10)
            .clamp(Duration::from_millis(5), Duration::from_millis(250))
    }
}

/// The rendezvous service, serving on a TCP port until [`shutdown`](Self::shutdown) or drop.
///
/// It serves any number of jobs, each named by its rendezvous id, with its state in memory:
/// a restarted server starts every job anew (agents join again when their calls fail).
#[derive(Debug)]
pub struct RendezvousServer {
    shutdown: watch::Sender<bool>,
    /// `None` once shut down.
    serving: Option<Serving>,
    ticker: JoinHandle<()>,
}

impl RendezvousServer {
    /// A server to configure, then [`start`](RendezvousServerBuilder::start).
    pub fn builder() -> RendezvousServerBuilder {
        RendezvousServerBuilder::default()
    }

    /// The address it serves on, with the port it got.
    pub fn local_addr(&self) -> SocketAddr {
        self.serving().local_addr()
    }

    /// How many connections the server holds open (admitted ones, and ones still waiting for
    /// their first bytes).
    pub fn open_connections(&self) -> usize {
        self.serving().open_connections()
    }

    /// Bytes of responses the server holds that their connections have not taken yet
    /// ([`Limits::with_response_memory`] bounds it).
    pub fn response_memory_in_use(&self) -> usize {
        self.serving().response_memory_in_use()
    }

    fn serving(&self) -> &Serving {
        self.serving
            .as_ref()
            .expect("a RendezvousServer serves until it is consumed")
    }

    /// [`shutdown_within`](Self::shutdown_within) [`SHUTDOWN_GRACE`].
    ///
    /// # Cancel safety
    ///
    /// As [`shutdown_within`](Self::shutdown_within)'s.
    pub async fn shutdown(self) {
        self.shutdown_within(SHUTDOWN_GRACE).await;
    }

    /// Stops serving: long polls in flight answer `UNAVAILABLE` at once, calls in flight get
    /// `grace` to finish, then the connections close. It stops whatever happens (no error to
    /// return), waiting at most `grace` and a second.
    ///
    /// # Cancel safety
    ///
    /// The stop is sent at once: dropped while it waits, the server still stops (its connections
    /// close by themselves); only the wait is cut short.
    pub async fn shutdown_within(mut self, grace: Duration) {
        let _ = self.shutdown.send(true);
        if let Some(serving) = self.serving.take() {
            // It stops whatever happens; an error of the server's is of no use any more.
            let _ = serving.shutdown_within(grace).await;
        }
    }
}

impl Drop for RendezvousServer {
    /// Stops serving as [`shutdown`](Self::shutdown) does, without waiting (dropping the
    /// serving handle stops it): the serving task ends its connections itself (aborting it
    /// would leave established connections served by their own tasks).
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.ticker.abort();
    }
}
