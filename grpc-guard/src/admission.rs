//! The accept loop's gate: which accepted connections the server serves.
//!
//! In order, a connection is closed at once when its peer is outside the allowed networks
//! ([`Access::with_allow`](crate::Access::with_allow)) or the server already holds
//! [`Limits::max_connections`](crate::Limits::max_connections) that have all started HTTP/2
//! (otherwise the oldest that has not makes room); closed after
//! [`Limits::handshake_timeout`](crate::Limits::handshake_timeout) unless it has sent the start
//! of HTTP/2 (the 24-byte preface and a frame header) or of TLS by then; and otherwise handed
//! to tonic. A connection waiting for its first bytes costs a socket and a small task, not
//! hyper's buffers. A refused peer is told why in an HTTP/2 `GOAWAY` where it speaks
//! plaintext, and in a TLS alert (`access_denied`) when outside the allowed networks of a TLS
//! server; every refusal is logged at most once per interval per cause.
//!
//! When accepting fails for want of file descriptors (`EMFILE`, `ENFILE`) or memory, accepting
//! pauses, 10 ms and doubling to 1 s, instead of retrying at once (tonic's loop would retry in
//! a busy loop, and the pending connection keeps the listener readable).

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Sleep;
use tonic::codegen::tokio_stream::Stream;

use crate::connection::{Connection, OpenConnections, PREFIX, Slot};
use crate::metrics::GuardMetrics;
use crate::network::Network;
use crate::refusals::{Cause, Refusals};

/// The first and the longest pause of accepting after it failed for want of resources.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// How long a refused connection stays open for its peer to read why.
const LINGER: Duration = Duration::from_secs(1);

/// The most refused connections lingering at a time.
const MAX_LINGERING: usize = 64;

/// What the gate needs besides the accepted connections.
pub(crate) struct Rules {
    /// What the server is, for the peer told why it is refused (`TaskServer`, `rendezvous`).
    pub(crate) kind: &'static str,
    pub(crate) allowed: Option<Arc<[Network]>>,
    pub(crate) max_connections: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) idle_timeout: Option<Duration>,
    /// Whether peers speak TLS, which a refused peer is told why in.
    pub(crate) tls: bool,
}

/// The connections of `inner` that the [`Rules`] admit.
pub(crate) struct Admission<S> {
    inner: S,
    rules: Rules,
    open: OpenConnections,
    /// Connections waiting for their first bytes.
    handshakes: JoinSet<Result<Connection, Option<SocketAddr>>>,
    /// The same, oldest first (some already done), to make room for a new connection.
    waiting: VecDeque<AbortHandle>,
    /// While accepting is paused, until when, and the next pause.
    paused: Option<Pin<Box<Sleep>>>,
    next_pause: Duration,
    refusals: Refusals,
    /// Refused connections still open for their peer to read why.
    lingering: Arc<AtomicUsize>,
}

impl<S> Admission<S> {
    /// `open` counts the connections it admits until each closes; `metrics` counts the
    /// refusals.
    pub(crate) fn new(
        inner: S,
        rules: Rules,
        open: OpenConnections,
        task: Arc<str>,
        metrics: GuardMetrics,
    ) -> Self {
        Self {
            inner,
            rules,
            open,
            handshakes: JoinSet::new(),
            waiting: VecDeque::new(),
            paused: None,
            next_pause: BACKOFF.0,
            refusals: Refusals::new(task, metrics),
            lingering: Arc::default(),
        }
    }

    /// Closes `stream` for `cause`, telling the peer why.
    fn refuse(&mut self, stream: TcpStream, cause: Cause, peer: Option<SocketAddr>) {
        let why = match cause {
            Cause::NotAllowed => peer.map(|p| {
                format!(
                    "tfcluster {}: {} is not in this server's allowed networks (--allow)",
                    self.rules.kind,
                    p.ip()
                )
            }),
            Cause::TooManyConnections => Some(format!(
                "tfcluster {}: the server holds its limit of {} connections \
                 (max_connections)",
                self.rules.kind, self.rules.max_connections
            )),
            _ => None,
        };
        if let Some(why) = why {
            let said = if self.rules.tls {
                tls_alert(cause)
            } else {
                goaway(&why)
            };
            linger(stream, said, &self.lingering);
        }
        self.refusals.note(cause, peer);
    }

    /// A slot for a new connection: a free one, or the one of the oldest connection still
    /// waiting for its first bytes, which is closed. A client that starts HTTP/2 at once (as
    /// every gRPC client does) is never the oldest for long, so holding connections without
    /// starting cannot keep it out.
    fn slot(&mut self) -> Option<Slot> {
        if let Some(slot) = self.open.take(self.rules.max_connections) {
            return Some(slot);
        }
        while let Some(oldest) = self.waiting.pop_front() {
            if !oldest.is_finished() {
                oldest.abort();
                self.refusals.note(Cause::NoHandshake, None);
                // Its slot (and socket) is given back when the runtime drops the aborted task:
                // at once when quiet, a moment later when busy, so the count may pass the cap
                // by the few connections evicted in that moment.
                return Some(self.open.take_over());
            }
        }
        None
    }

    /// Starts waiting for `stream`'s first bytes.
    fn handshake(&mut self, stream: TcpStream, slot: Slot) {
        let timeout = self.rules.handshake_timeout;
        let idle = self.rules.idle_timeout;
        // A handle keeps its finished task's memory: keep only about as many as are waiting.
        while self.waiting.front().is_some_and(AbortHandle::is_finished) {
            self.waiting.pop_front();
        }
        if self.waiting.len() > 2 * self.handshakes.len() + 16 {
            self.waiting.retain(|h| !h.is_finished());
        }
        let handle = self.handshakes.spawn(async move {
            let peer = stream.peer_addr().ok();
            let mut stream = stream;
            let mut prefix = [0; PREFIX];
            let mut len = 0;
            let read = tokio::time::timeout(timeout, async {
                while len < PREFIX {
                    match stream.read(&mut prefix[len..]).await {
                        Ok(0) | Err(_) => return false,
                        Ok(n) => len += n,
                    }
                }
                true
            });
            match read.await {
                Ok(true) => Ok(Connection::new(stream, prefix, len, slot, idle)),
                // Closed by the peer before it started: nothing to report.
                Ok(false) => Err(None),
                Err(_) => Err(peer),
            }
        });
        self.waiting.push_back(handle);
    }
}

/// What tells a plaintext HTTP/2 peer why its connection is closed: the server's (empty)
/// SETTINGS, then `GOAWAY` with `REFUSED_STREAM` and `why` as its debug data, which gRPC
/// clients show in their error.
fn goaway(why: &str) -> Vec<u8> {
    let why = &why.as_bytes()[..why.len().min(512)];
    let mut frames = Vec::with_capacity(9 + 9 + 8 + why.len());
    // SETTINGS: length 0, type 4, no flags, stream 0.
    frames.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // GOAWAY: type 7 on stream 0; last stream 0, REFUSED_STREAM (7), debug data.
    let len = (8 + why.len()) as u32;
    frames.extend_from_slice(&len.to_be_bytes()[1..]);
    frames.extend_from_slice(&[7, 0, 0, 0, 0, 0]);
    frames.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7]);
    frames.extend_from_slice(why);
    frames
}

/// What tells a TLS peer refused for `cause` why, before any handshake (HTTP/2 bytes would
/// read as a corrupt record): outside the allowed networks, a fatal `access_denied` alert
/// (RFC 8446 §6.2: "access control was applied [and] the sender decided not to proceed"),
/// which rustls clients report as `AccessDenied`; for the others nothing, the close itself,
/// which a client retries.
fn tls_alert(cause: Cause) -> Vec<u8> {
    match cause {
        // A record of type alert (21), TLS 1.2's record version, 2 bytes: fatal (2), 49.
        Cause::NotAllowed => vec![21, 3, 3, 0, 2, 2, 49],
        _ => Vec::new(),
    }
}

/// Writes `said` to a refused peer, then the end of the stream; then reads what the peer sends
/// until it closes or [`LINGER`] passes. Closing at once would reset the connection under the
/// client's first writes, and it would report a broken pipe instead. At most
/// [`MAX_LINGERING`] refused connections linger at a time; past that they are closed at once.
fn linger(mut stream: TcpStream, said: Vec<u8>, lingering: &Arc<AtomicUsize>) {
    let taken = lingering.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < MAX_LINGERING).then_some(n + 1)
    });
    if taken.is_err() {
        let _ = stream.try_write(&said);
        return;
    }
    let lingering = lingering.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(LINGER, async {
            stream.write_all(&said).await?;
            // Done writing (the peer reads the end after why), still reading.
            stream.shutdown().await?;
            let mut scratch = [0; 1024];
            while stream.read(&mut scratch).await? > 0 {}
            io::Result::Ok(())
        })
        .await;
        lingering.fetch_sub(1, Ordering::AcqRel);
    });
}

/// Whether accepting failed for want of resources, which retrying at once cannot cure.
fn out_of_resources(error: &io::Error) -> bool {
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    const ENOBUFS: i32 = 105;
    const ENOMEM: i32 = 12;
    matches!(
        error.raw_os_error(),
        Some(ENFILE | EMFILE | ENOBUFS | ENOMEM)
    )
}

impl<S> Stream for Admission<S>
where
    S: Stream<Item = io::Result<TcpStream>> + Unpin,
{
    type Item = io::Result<Connection>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(pause) = &mut this.paused
            && pause.as_mut().poll(cx).is_ready()
        {
            this.paused = None;
        }
        while this.paused.is_none() {
            let stream = match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(stream))) => stream,
                Poll::Ready(Some(Err(error))) if out_of_resources(&error) => {
                    this.refusals.note(Cause::AcceptFailed, None);
                    let mut pause = Box::pin(tokio::time::sleep(this.next_pause));
                    this.next_pause = (this.next_pause * 2).min(BACKOFF.1);
                    // Registers the wake-up.
                    let _ = pause.as_mut().poll(cx);
                    this.paused = Some(pause);
                    break;
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => break,
            };
            this.next_pause = BACKOFF.0;
            let peer = stream.peer_addr().ok();
            let allowed = match (&this.rules.allowed, peer) {
                (None, _) => true,
                (Some(networks), Some(peer)) => networks.iter().any(|n| n.contains(peer.ip())),
                // Already gone.
                (Some(_), None) => false,
            };
            if !allowed {
                this.refuse(stream, Cause::NotAllowed, peer);
                continue;
            }
            match this.slot() {
                Some(slot) => this.handshake(stream, slot),
                None => this.refuse(stream, Cause::TooManyConnections, peer),
            }
        }
        loop {
            match this.handshakes.poll_join_next(cx) {
                Poll::Ready(Some(Ok(Ok(connection)))) => return Poll::Ready(Some(Ok(connection))),
                Poll::Ready(Some(Ok(Err(Some(peer))))) => {
                    this.refusals.note(Cause::NoHandshake, Some(peer));
                }
                Poll::Ready(Some(_)) => {}
                Poll::Ready(None) | Poll::Pending => {
                    // Counted refusals are logged when their interval ends.
                    this.refusals.poll_flush(cx);
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A listener out of descriptors: every accept fails with EMFILE; counts the tries.
    struct OutOfDescriptors(Arc<AtomicUsize>);

    impl Stream for OutOfDescriptors {
        type Item = io::Result<TcpStream>;

        fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Poll::Ready(Some(Err(io::Error::from_raw_os_error(24))))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn accepting_pauses_when_out_of_descriptors_instead_of_spinning() {
        let tries = Arc::new(AtomicUsize::new(0));
        let rules = Rules {
            kind: "TaskServer",
            allowed: None,
            max_connections: 10,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: None,
            tls: false,
        };
        let mut admission = Admission::new(
            OutOfDescriptors(tries.clone()),
            rules,
            OpenConnections::default(),
            "/job:worker/replica:0/task:0".into(),
            GuardMetrics::default(),
        );
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut poll = || Pin::new(&mut admission).poll_next(&mut cx).is_pending();
        assert!(poll());
        assert_eq!(tries.load(Ordering::SeqCst), 1, "one try, then a pause");
        assert!(poll());
        assert_eq!(tries.load(Ordering::SeqCst), 1, "paused");
        // The pause doubles from 10 ms to 1 s.
        let mut expected = 1;
        for pause in [10, 20, 40, 80, 160, 320, 640, 1000, 1000] {
            tokio::time::advance(Duration::from_millis(pause - 1)).await;
            assert!(poll());
            assert_eq!(
                tries.load(Ordering::SeqCst),
                expected,
                "paused for {pause} ms"
            );
            tokio::time::advance(Duration::from_millis(1)).await;
            assert!(poll());
            expected += 1;
            assert_eq!(
                tries.load(Ordering::SeqCst),
                expected,
                "tried after {pause} ms"
            );
        }
    }
}
