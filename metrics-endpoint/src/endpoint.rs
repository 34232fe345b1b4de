//! [`MetricsEndpoint`]'s builder and [`Serving`] handle, and the listener: binds the address,
//! accepts under the connection cap (the oldest connection
//! still waiting for its request makes room for a new one), and serves each connection one
//! request under the deadlines.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

use crate::answer::answer;
use crate::{Error, Health, Limits};

/// The port a [`MetricsEndpoint`] binds unless [`with_bind`](MetricsEndpointBuilder::with_bind)
/// says otherwise: every interface, port 9400 (a Prometheus exporter's customary range).
pub const DEFAULT_BIND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 9400);

/// A registry's metrics and a health check on an HTTP port of their own:
/// [`builder`](Self::builder), then [`start`](MetricsEndpointBuilder::start).
#[derive(Debug, Clone, Copy)]
pub struct MetricsEndpoint;

impl MetricsEndpoint {
    /// An endpoint to configure that will serve `registry` at `/metrics` and `health` at
    /// `/healthz`.
    pub fn builder(registry: Arc<Registry>, health: Health) -> MetricsEndpointBuilder {
        MetricsEndpointBuilder {
            registry,
            health,
            bind: DEFAULT_BIND,
            limits: Limits::default(),
        }
    }
}

/// Configures a [`MetricsEndpoint`] before it starts.
#[derive(Debug)]
#[must_use = "a builder does nothing until start() is awaited"]
pub struct MetricsEndpointBuilder {
    registry: Arc<Registry>,
    health: Health,
    bind: SocketAddr,
    limits: Limits,
}

impl MetricsEndpointBuilder {
    /// Listen on `addr` instead of [`DEFAULT_BIND`]. Port 0 lets the OS pick a free port, with
    /// no race: [`Serving::local_addr`] tells which.
    pub fn with_bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// What a client may make the endpoint hold ([`Limits`]; default [`Limits::default`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Binds the address and serves on a task of the current tokio runtime until the
    /// returned [`Serving`] is shut down or dropped.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] naming the address when it cannot be bound (in use, not this host's).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before it finishes, nothing is bound.
    pub async fn start(self) -> Result<Serving, Error> {
        let bind_error = |source| Error::Bind {
            addr: self.bind,
            source,
        };
        let listener = TcpListener::bind(self.bind).await.map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(
            listener,
            self.limits,
            self.registry,
            self.health,
            stopped,
        ));
        Ok(Serving {
            addr,
            stop: Some(stop),
            task,
        })
    }
}

/// The serving endpoint: its address, and its stop ([`shutdown_within`](Self::shutdown_within),
/// or dropping it, which closes every connection at once).
#[derive(Debug)]
pub struct Serving {
    addr: SocketAddr,
    /// Tells the accept loop to stop, with how long answers in flight may take.
    stop: Option<oneshot::Sender<Duration>>,
    task: JoinHandle<()>,
}

impl Serving {
    /// The address it serves on, with the port it got.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving: no new connection is accepted, answers in flight get `grace` to finish
    /// (each at most the response deadline anyway), then every connection is closed. It
    /// stops whatever happens (no error to return).
    ///
    /// # Cancel safety
    ///
    /// The stop is sent at once: dropped while it waits, the endpoint stops at once.
    pub async fn shutdown_within(mut self, grace: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(grace);
        }
        // The loop ends within the grace; a panic in it is of no use any more.
        let _ = (&mut self.task).await;
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Its connections are in the loop's JoinSet, aborted with it.
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    registry: Arc<Registry>,
    health: Health,
    mut stop: oneshot::Receiver<Duration>,
) {
    // The connections' tasks (aborted when the loop ends or is aborted), and the same, oldest
    // first, each with whether its request came in; aborting one closes its socket.
    let mut connections = JoinSet::new();
    let mut open: VecDeque<(AbortHandle, Arc<AtomicBool>)> = VecDeque::new();
    let mut refused_for_files = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            grace = &mut stop => {
                drop(listener);
                // The sender dropped without a grace is the Serving dropped: no wait.
                let grace = grace.unwrap_or_default();
                let _ = tokio::time::timeout(grace, async {
                    while connections.join_next().await.is_some() {}
                })
                .await;
                connections.shutdown().await;
                return;
            }
        };
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a reset before accept: pause rather than spin.
                tracing::debug!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(refused_for_files).await;
                refused_for_files = (refused_for_files * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        refused_for_files = Duration::from_millis(10);
        open.retain(|(task, _)| !task.is_finished());
        // At the cap, the oldest connection still waiting for its request makes room: one
        // being answered (a scrape) is not cut off by a flood of new ones. When every one is
        // being answered (each for at most the response deadline), the new one is closed.
        if open.len() >= limits.max_connections() {
            let waiting = open
                .iter()
                .position(|(_, asked)| !asked.load(Ordering::Acquire));
            match waiting.and_then(|i| open.remove(i)) {
                Some((oldest, _)) => oldest.abort(),
                None => continue,
            }
        }
        let asked = Arc::new(AtomicBool::new(false));
        let task = connections.spawn(serve_one(
            stream,
            limits.clone(),
            registry.clone(),
            health.clone(),
            asked.clone(),
        ));
        open.push_back((task, asked));
    }
}

async fn serve_one(
    stream: tokio::net::TcpStream,
    limits: Limits,
    registry: Arc<Registry>,
    health: Health,
    asked: Arc<AtomicBool>,
) {
    let service = service_fn(move |request| {
        asked.store(true, Ordering::Release);
        let response = answer(&request, &registry, &health);
        async move { Ok::<_, Infallible>(response) }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(limits.max_request_bytes())
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    // Past the deadline the connection is dropped, answered or not: a client reading the
    // answer a byte a minute holds nothing for long.
    let _ = tokio::time::timeout(limits.response_deadline(), connection).await;
}
