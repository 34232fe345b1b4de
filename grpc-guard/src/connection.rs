//! One accepted connection as the server serves it: the bytes read while admitting it handed
//! back first, its slot among [`Limits::max_connections`](crate::Limits::max_connections)
//! given back when it closes, and closed once it has had no request in flight for
//! [`Limits::idle_timeout`](crate::Limits::idle_timeout), or when a shutdown's grace period is
//! over ([`OpenConnections::abort_all`]). Each response is delivered under the server's
//! response rules on the way out ([`Delivery`]).
//!
//! hyper never closes an HTTP/2 connection that answers its pings, however long it stays
//! without a stream; a client that holds thousands of them holds a server's memory. The
//! requests in flight on each connection are counted by [`CountStreams`] (a layer around
//! every service, which finds the connection's count in the request's connect info) and the
//! connection's reads fail with `TimedOut` once it has been idle too long, which makes hyper
//! drop it. A gRPC client reconnects on its next call.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;
use tokio::time::{Instant, Sleep};
use tonic::body::Body;
use tonic::codegen::{Service, http};
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::delivery::{Delivery, Responses};

/// The most bytes read from a connection while admitting it.
pub(crate) const PREFIX: usize = 33;

/// How many connections are open; a [`Slot`] is one of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpenConnections(Arc<Open>);

#[derive(Debug, Default)]
struct Open {
    count: AtomicUsize,
    /// Set by [`OpenConnections::abort_all`]; every connection's I/O fails from then on.
    aborted: AtomicBool,
    /// Wakes the connections when they are aborted.
    abort: Arc<Notify>,
}

impl OpenConnections {
    /// A slot if fewer than `max` are open.
    pub(crate) fn take(&self, max: usize) -> Option<Slot> {
        self.0
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self.0.clone()))
    }

    /// A slot even past the limit: for one taken over from a connection being closed.
    pub(crate) fn take_over(&self) -> Slot {
        self.0.count.fetch_add(1, Ordering::AcqRel);
        Slot(self.0.clone())
    }

    pub(crate) fn count(&self) -> usize {
        self.0.count.load(Ordering::Acquire)
    }

    /// Makes every connection's reads and writes fail, now and later, so that hyper drops
    /// them with whatever they had in flight: the end of a graceful shutdown that ran out of
    /// time.
    pub(crate) fn abort_all(&self) {
        self.0.aborted.store(true, Ordering::Release);
        self.0.abort.notify_waiters();
    }
}

/// One open connection's place in [`OpenConnections`]; given back on drop.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Open>);

impl Slot {
    /// Completes when the connections are aborted after it was made (one aborted before
    /// shows in the flag, which [`Connection`] reads too).
    fn aborted(&self) -> Pin<Box<OwnedNotified>> {
        Box::pin(self.0.abort.clone().notified_owned())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The requests in flight on one connection, and since when it has had none.
#[derive(Debug)]
pub(crate) struct Streams(Mutex<(usize, Instant)>);

impl Streams {
    fn new() -> Self {
        Self(Mutex::new((0, Instant::now())))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, Instant)> {
        // Two plain numbers: a panic cannot leave them half-updated.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Since when the connection has had no request in flight; `None` while it has some.
    fn idle_since(&self) -> Option<Instant> {
        let (open, since) = *self.lock();
        (open == 0).then_some(since)
    }

    fn open(self: &Arc<Self>) -> InFlight {
        self.lock().0 += 1;
        InFlight(self.clone())
    }
}

/// One request in flight; ends on drop (when its response has been sent, or it was dropped
/// or cut).
pub(crate) struct InFlight(Arc<Streams>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut streams = self.0.lock();
        streams.0 -= 1;
        if streams.0 == 0 {
            streams.1 = Instant::now();
        }
    }
}

/// What a request's extensions hold about its connection (tonic puts a connection's
/// [`Connected::ConnectInfo`] there; with TLS, inside its `TlsConnectInfo`).
#[derive(Clone, Debug)]
pub(crate) struct ConnectionInfo {
    streams: Arc<Streams>,
    /// The addresses, which [`CountStreams`] puts where tonic's `Request::remote_addr` looks.
    tcp: TcpConnectInfo,
}

/// An accepted, admitted connection.
pub(crate) struct Connection {
    stream: TcpStream,
    /// What was read while admitting it, handed to the reader first.
    prefix: [u8; PREFIX],
    prefix_len: usize,
    prefix_read: usize,
    slot: Slot,
    streams: Arc<Streams>,
    tcp: TcpConnectInfo,
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// Completes when the server aborts its connections.
    aborted: Pin<Box<OwnedNotified>>,
}

impl Connection {
    pub(crate) fn new(
        stream: TcpStream,
        prefix: [u8; PREFIX],
        prefix_len: usize,
        slot: Slot,
        idle_timeout: Option<Duration>,
    ) -> Self {
        let tcp = TcpConnectInfo {
            local_addr: stream.local_addr().ok(),
            remote_addr: stream.peer_addr().ok(),
        };
        Self {
            tcp,
            stream,
            prefix,
            prefix_len,
            prefix_read: 0,
            aborted: slot.aborted(),
            slot,
            streams: Arc::new(Streams::new()),
            idle: idle_timeout.map(|t| (t, Box::pin(tokio::time::sleep(t)))),
        }
    }

    /// The error every read and write returns once the server aborted its connections.
    fn check_aborted(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.aborted.as_mut().poll(cx).is_ready() || self.slot.0.aborted.load(Ordering::Acquire)
        {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed: the server is shutting down and its grace period is over",
            ));
        }
        Ok(())
    }

    /// Whether the connection has been idle past its timeout; otherwise arms the timer for
    /// when it could be.
    fn idle_past_timeout(&mut self, cx: &mut Context<'_>) -> bool {
        let Some((timeout, sleep)) = &mut self.idle else {
            return false;
        };
        while sleep.as_mut().poll(cx).is_ready() {
            let next = match self.streams.idle_since() {
                Some(since) if since.elapsed() >= *timeout => return true,
                Some(since) => since + *timeout,
                None => Instant::now() + *timeout,
            };
            sleep.as_mut().reset(next);
        }
        false
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.prefix_read < this.prefix_len {
            let n = (this.prefix_len - this.prefix_read).min(buf.remaining());
            buf.put_slice(&this.prefix[this.prefix_read..this.prefix_read + n]);
            this.prefix_read += n;
            return Poll::Ready(Ok(()));
        }
        if let Err(error) = this.check_aborted(cx) {
            return Poll::Ready(Err(error));
        }
        if this.idle_past_timeout(cx) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: no request in flight for the server's idle_timeout",
            )));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Err(error) = self.check_aborted(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Err(error) = self.check_aborted(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Connected for Connection {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        ConnectionInfo {
            streams: self.streams.clone(),
            tcp: self.tcp.clone(),
        }
    }
}

/// Counts each request in flight on its connection, from its call until its response body
/// is done, dropped or cut, and delivers each response ([`Delivery`]).
#[derive(Clone, Debug)]
pub(crate) struct CountStreams<S> {
    pub(crate) inner: S,
    pub(crate) responses: Responses,
}

/// The connection's info, wherever tonic put it.
fn info_of<B>(request: &http::Request<B>) -> Option<&ConnectionInfo> {
    let extensions = request.extensions();
    let info = extensions.get::<ConnectionInfo>();
    #[cfg(feature = "tls")]
    let info = info.or_else(|| {
        extensions
            .get::<tonic::transport::server::TlsConnectInfo<ConnectionInfo>>()
            .map(|tls| tls.get_ref())
    });
    info
}

impl<S> Service<http::Request<Body>> for CountStreams<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let info = info_of(&request).cloned();
        let in_flight = info.as_ref().map(|info| info.streams.open());
        if let Some(info) = info {
            // Where tonic's `Request::remote_addr` finds the peer (the rendezvous takes an
            // agent's host from it).
            request.extensions_mut().insert(info.tcp);
        }
        let response = self.inner.call(request);
        let responses = self.responses.clone();
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Body::new(Delivery::new(body, in_flight, &responses))))
        })
    }
}
