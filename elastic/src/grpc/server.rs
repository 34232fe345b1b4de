//! [`RendezvousServer`]: the rendezvous service, in process, on a port of its own: the
//! memory store's rendezvous served over gRPC.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use super::service::Service;
use crate::proto::rendezvous_server::RendezvousServer as RendezvousService;
use crate::rendezvous::credentials::Digest;
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

/// How a [`RendezvousServer`] times rounds and nodes, and what it holds at most.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    last_call: Duration,
    timeout: Duration,
    max_jobs: usize,
    token: Option<Token>,
}

impl Default for ServerOptions {
    /// A 3 s last call, a 3 s heartbeat timeout, long polls of up to 30 s (and a third of the
    /// timeout), 1,024 jobs.
    fn default() -> Self {
        Self {
            last_call: Duration::from_secs(3),
            timeout: crate::DEFAULT_TIMEOUT,
            max_jobs: 1024,
            token: None,
        }
    }
}

impl ServerOptions {
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

    /// The server's own token (`tfcluster rendezvous serve --token-file`): it takes no call,
    /// on any job, without it (`UNAUTHENTICATED`), and each job created here has it as its
    /// token. Without one (the default), each job's first join sets the job's token, or
    /// leaves the job open. Observers need it too.
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// The server's own token, if it has one.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
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
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    serve: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    ticker: JoinHandle<()>,
}

impl RendezvousServer {
    /// Binds `addr` (port 0 picks a free port, see [`local_addr`](Self::local_addr)) and
    /// serves. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] when `addr` cannot be bound.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before it returns, nothing serves and the port is let go.
    pub async fn start(addr: SocketAddr, options: ServerOptions) -> Result<Self, Error> {
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
            token: options
                .token
                .as_ref()
                .map(|t| Digest::of(t.expose_secret())),
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

        let service = RendezvousService::new(Service {
            local: Local::new(memory),
        })
        .max_decoding_message_size(MAX_REQUEST_BYTES);
        let incoming = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(Duration::from_secs(30)));
        let mut stop = shutdown.subscribe();
        let router = Server::builder()
            // Every call answers within its poll cap; this bounds anything else.
            .timeout(options.poll_cap() + Duration::from_secs(10))
            .http2_keepalive_interval(Some(Duration::from_secs(10)))
            .http2_keepalive_timeout(Some(Duration::from_secs(20)))
            .max_concurrent_streams(256)
            .add_service(service);
        let serve = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|stopping| *stopping).await;
        }));
        tracing::info!(%local_addr, "rendezvous serving");
        Ok(Self {
            local_addr,
            shutdown,
            serve: Some(serve),
            ticker,
        })
    }

    /// The address it serves on, with the port it got.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving: long polls in flight answer `UNAVAILABLE` at once, then the connections
    /// close. Waits for that at most 5 s.
    ///
    /// # Errors
    ///
    /// None: it stops whatever happens, waiting at most 5 s.
    ///
    /// # Cancel safety
    ///
    /// The stop is sent at once: dropped while it waits, the server still stops (its connections
    /// close by themselves); only the wait is cut short.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(serve) = self.serve.take() {
            let abort = serve.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), serve)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for RendezvousServer {
    /// Stops serving as [`shutdown`](Self::shutdown) does, without waiting: the serving task
    /// ends its connections itself (aborting it would leave established connections served
    /// by their own tasks).
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.ticker.abort();
    }
}
