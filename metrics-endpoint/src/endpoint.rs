//! The listener: binds the address, accepts under the connection cap (the oldest connection
//! still waiting for its request makes room for a new one), and serves each connection one
//! request under the deadlines.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinHandle};

use crate::answer::answer;
use crate::{Error, Health, Limits};

/// A bound metrics port, not yet serving: [`MetricsEndpoint::bind`], then
/// [`MetricsEndpoint::spawn`].
#[derive(Debug)]
pub struct MetricsEndpoint {
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
}

/// The serving endpoint: its address; dropping it stops serving.
#[derive(Debug)]
pub struct Serving {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds `addr` (port 0 picks a free port; [`MetricsEndpoint::local_addr`] says which).
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] naming `addr` when it cannot be bound (in use, not this host's).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before it finishes, nothing is bound.
    pub async fn bind(addr: SocketAddr, limits: Limits) -> Result<Self, Error> {
        let bind_error = |source| Error::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        Ok(Self {
            listener,
            addr,
            limits,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `registry` at `/metrics` and `health` at `/healthz` on a task of the current
    /// tokio runtime until the returned [`Serving`] is dropped.
    pub fn spawn(self, registry: Arc<Registry>, health: Health) -> Serving {
        let addr = self.addr;
        let task = tokio::spawn(accept_loop(self.listener, self.limits, registry, health));
        Serving { addr, task }
    }
}

impl Serving {
    /// The address it serves on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    registry: Arc<Registry>,
    health: Health,
) {
    // The connections' tasks, oldest first, each with whether its request came in; aborting
    // one closes its socket.
    let mut open: VecDeque<(AbortHandle, Arc<AtomicBool>)> = VecDeque::new();
    let mut refused_for_files = std::time::Duration::from_millis(10);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a reset before accept: pause rather than spin.
                tracing::debug!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(refused_for_files).await;
                refused_for_files = (refused_for_files * 2).min(std::time::Duration::from_secs(1));
                continue;
            }
        };
        refused_for_files = std::time::Duration::from_millis(10);
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
        let task = tokio::spawn(serve_one(
            stream,
            limits.clone(),
            registry.clone(),
            health.clone(),
            asked.clone(),
        ));
        open.push_back((task.abort_handle(), asked));
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
