//! The response side: each response body handed to the connection in slices, the bytes its
//! connection has not taken yet charged to the server's response memory
//! ([`Limits::response_memory`](crate::Limits::response_memory)), and a response whose bytes
//! are not all taken within [`Limits::message_timeout`](crate::Limits::message_timeout) cut.
//!
//! hyper takes a response's first frame (for a unary gRPC call, its whole encoded message)
//! whatever the peer's flow-control window, and h2 holds it until the peer's window lets it
//! out. A peer that opens streams and never reads them (window 0, or a socket it never reads)
//! made a server hold each response for as long as the connection lived: 48 such streams on
//! a large rendezvous round held 952 MB, 128 ended the server on a failed allocation. Here:
//!
//! - a response's frames reach hyper in slices of at most [`SLICE`] bytes, so h2 holds at most
//!   its send buffer of each stream and the rest stays here, where it is counted;
//! - every byte is charged from when the service's body yields it until h2 has written it
//!   (a slice's charge is given back when h2 drops it). A frame that does not fit the
//!   budget is not sent: the response ends with `RESOURCE_EXHAUSTED` in its trailers when
//!   nothing of it was sent yet, else its stream is reset;
//! - a response whose bytes are not all taken within the message timeout of when the
//!   oldest of them was yielded is cut by a watchdog: what it holds (the service's body and
//!   the untaken bytes) is dropped at once, its request stops counting as in flight (so its
//!   connection can be closed as idle), and the stream is reset (`RST_STREAM`) as soon as
//!   hyper polls it again, which it does when the peer's window opens. A slice already in
//!   h2's send buffer stays there, charged, until the stream or connection goes.
//!
//! The watchdog is a small task per response, started with its first frame; it sleeps until
//! the deadline and ends with the response.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, HeaderValue};

use crate::connection::InFlight;
use crate::request_memory::{Charge, RequestMemory};
use crate::throttled_log::{INTERVAL, Throttled};

/// The most bytes handed to hyper at a time: HTTP/2's default frame size.
pub(crate) const SLICE: usize = 16 * 1024;

/// What every response of one server shares: its response memory and message timeout.
#[derive(Clone, Debug)]
pub(crate) struct Responses {
    pub(crate) memory: RequestMemory,
    pub(crate) timeout: Duration,
    /// The server, for the log.
    pub(crate) server: Arc<str>,
    /// The log lines of responses refused and cut, one an interval each.
    pub(crate) log: Arc<ResponseLog>,
}

/// How often responses were refused for want of memory, and cut past the message timeout.
#[derive(Debug, Default)]
pub(crate) struct ResponseLog {
    refused: Throttled,
    cut: Throttled,
}

/// A response body delivered under the [`Responses`] rules (see the module docs).
pub(crate) struct Delivery {
    shared: Arc<Shared>,
    /// Whether any bytes of the response went to hyper.
    sent_any: bool,
    /// The watchdog, once the first frame came; aborted when the response is dropped.
    watchdog: Option<AbortHandle>,
}

struct Shared {
    state: Mutex<State>,
    responses: Responses,
}

struct State {
    /// The service's body; `None` once it ended or the response was cut.
    inner: Option<Body>,
    /// The rest of the current frame, not yet handed to hyper, and its charge.
    pending: Bytes,
    pending_charge: Charge,
    /// Bytes yielded by the service and not yet written by h2 (pending and in slices).
    untaken: usize,
    /// Since when some bytes have been untaken.
    since: Option<Instant>,
    /// The request, counted in flight on its connection until the response is done or cut.
    in_flight: Option<InFlight>,
    cut: bool,
    /// The task polling the body, woken when the response is cut.
    waker: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain values: a panic cannot leave them half-updated.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `bytes` of the response taken by h2.
    fn taken(&self, bytes: usize) {
        let mut state = self.lock();
        state.untaken = state.untaken.saturating_sub(bytes);
        if state.untaken == 0 {
            state.since = None;
        }
    }
}

/// A slice handed to hyper: its charge is given back, and its bytes counted as taken, when
/// h2 drops it after writing it.
struct Slice {
    bytes: Bytes,
    _charge: Charge,
    shared: Arc<Shared>,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Slice {
    fn drop(&mut self) {
        self.shared.taken(self.bytes.len());
    }
}

impl Delivery {
    pub(crate) fn new(body: Body, in_flight: Option<InFlight>, responses: &Responses) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    inner: Some(body),
                    pending: Bytes::new(),
                    pending_charge: responses.memory.charge(),
                    untaken: 0,
                    since: None,
                    in_flight,
                    cut: false,
                    waker: None,
                }),
                responses: responses.clone(),
            }),
            sent_any: false,
            watchdog: None,
        }
    }

    /// Starts the watchdog, once.
    fn watch(&mut self) {
        if self.watchdog.is_some() {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        let timeout = self.shared.responses.timeout;
        self.watchdog = Some(
            tokio::spawn(async move {
                let mut wake_at = Instant::now() + timeout;
                loop {
                    tokio::time::sleep_until(wake_at).await;
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    let mut state = shared.lock();
                    match state.since {
                        Some(since) if since.elapsed() >= timeout => {
                            cut(&mut state, &shared.responses);
                            return;
                        }
                        Some(since) => wake_at = since + timeout,
                        None => wake_at = Instant::now() + timeout,
                    }
                }
            })
            .abort_handle(),
        );
    }

    /// The next slice of the pending frame, charged.
    fn slice(&self, state: &mut State) -> Frame<Bytes> {
        let n = state.pending.len().min(SLICE);
        let bytes = state.pending.split_to(n);
        // The charge of the rest stays; this slice's goes with it.
        let charge = state.pending_charge.split_off(n);
        Frame::data(Bytes::from_owner(Slice {
            bytes,
            _charge: charge,
            shared: self.shared.clone(),
        }))
    }
}

/// Drops what the response holds and marks it cut; its stream is reset when next polled.
fn cut(state: &mut State, responses: &Responses) {
    let untaken = state.untaken;
    state.inner = None;
    state.pending = Bytes::new();
    let _ = state.pending_charge.split_off(usize::MAX);
    state.in_flight = None;
    state.cut = true;
    if let Some(waker) = state.waker.take() {
        waker.wake();
    }
    if let Some(cut) = responses.log.cut.note() {
        tracing::warn!(
            server = %responses.server,
            untaken,
            timeout = ?responses.timeout,
            cut,
            "cut {cut} response(s) their peers did not take within the message timeout (this \
             one held {untaken} bytes); their streams are reset and what they held freed; \
             more are counted and logged at most every {INTERVAL:?}"
        );
    }
}

/// The trailers of a response refused with `status` (tonic's own encoding of its
/// `grpc-status` and percent-encoded `grpc-message`).
fn trailers_of(status: &tonic::Status) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    // Only a message that cannot be a header value fails, and the status alone still says it.
    if status.add_header(&mut trailers).is_err() {
        trailers.insert("grpc-status", HeaderValue::from(status.code() as i32));
    }
    trailers
}

impl HttpBody for Delivery {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let shared = this.shared.clone();
        let mut state = shared.lock();
        if state.cut {
            state.cut = false;
            return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(format!(
                "the response was not taken within {:?} (the server's message_timeout)",
                shared.responses.timeout
            )))));
        }
        if !state.pending.is_empty() {
            this.sent_any = true;
            return Poll::Ready(Some(Ok(this.slice(&mut state))));
        }
        let Some(inner) = state.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = match Pin::new(inner).poll_frame(cx) {
            Poll::Pending => {
                state.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            Poll::Ready(None) => {
                state.inner = None;
                state.in_flight = None;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Err(status))) => return Poll::Ready(Some(Err(status))),
            Poll::Ready(Some(Ok(frame))) => frame,
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(other) => return Poll::Ready(Some(Ok(other))),
        };
        if data.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        let mut charge = shared.responses.memory.charge();
        if let Err(status) = charge.add(data.len()) {
            state.inner = None;
            state.in_flight = None;
            drop(state);
            if let Some(refused) = shared.responses.log.refused.note() {
                tracing::warn!(
                    server = %shared.responses.server,
                    bytes = data.len(),
                    refused,
                    "refused {refused} response(s) for want of response memory, the latest: \
                     {}; more are counted and logged at most every {INTERVAL:?}",
                    status.message()
                );
            }
            return Poll::Ready(Some(if this.sent_any {
                Err(status)
            } else {
                Ok(Frame::trailers(trailers_of(&status)))
            }));
        }
        state.untaken += data.len();
        state.since.get_or_insert_with(Instant::now);
        state.pending = data;
        state.pending_charge = charge;
        this.sent_any = true;
        let slice = this.slice(&mut state);
        drop(state);
        this.watch();
        Poll::Ready(Some(Ok(slice)))
    }

    fn is_end_stream(&self) -> bool {
        let state = self.shared.lock();
        !state.cut
            && state.pending.is_empty()
            && state.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let state = self.shared.lock();
        match &state.inner {
            Some(inner) => {
                let mut hint = inner.size_hint();
                let pending = state.pending.len() as u64;
                hint.set_lower(hint.lower() + pending);
                if let Some(upper) = hint.upper() {
                    hint.set_upper(upper + pending);
                }
                hint
            }
            None => SizeHint::with_exact(state.pending.len() as u64),
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::StreamBody;
    use tonic::codegen::tokio_stream::{self, StreamExt};

    use super::*;

    fn responses(total: usize) -> Responses {
        Responses {
            memory: RequestMemory::for_responses(total),
            timeout: Duration::from_secs(60),
            server: "test".into(),
            log: Arc::default(),
        }
    }

    /// A body of one data frame of `len` bytes, then trailers, or pending forever.
    fn body(len: usize, then_pending: bool) -> Body {
        let frames = tokio_stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from(vec![
            7u8;
            len
        ])))]);
        if then_pending {
            Body::new(StreamBody::new(frames.chain(tokio_stream::pending())))
        } else {
            Body::new(StreamBody::new(frames))
        }
    }

    fn poll(body: &mut Delivery) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let waker = Waker::noop();
        Pin::new(body).poll_frame(&mut Context::from_waker(waker))
    }

    #[tokio::test]
    async fn a_response_goes_out_in_slices_each_charged_until_dropped() {
        let responses = responses(1 << 20);
        let mut body = Delivery::new(body(3 * SLICE + 5, false), None, &responses);
        let mut slices = Vec::new();
        while let Poll::Ready(Some(frame)) = poll(&mut body) {
            slices.push(frame.unwrap().into_data().unwrap());
        }
        let lens: Vec<usize> = slices.iter().map(Bytes::len).collect();
        assert_eq!(lens, [SLICE, SLICE, SLICE, 5]);
        assert_eq!(responses.memory.in_use(), 3 * SLICE + 5, "not taken yet");
        slices.truncate(1);
        assert_eq!(responses.memory.in_use(), SLICE);
        drop(slices);
        assert_eq!(responses.memory.in_use(), 0);
    }

    #[tokio::test]
    async fn a_response_past_the_budget_ends_with_resource_exhausted() {
        let responses = responses(1000);
        let mut body = Delivery::new(body(1001, false), None, &responses);
        let Poll::Ready(Some(Ok(frame))) = poll(&mut body) else {
            panic!("no trailers")
        };
        let trailers = frame.into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "8");
        assert_eq!(trailers[crate::PUSHBACK_HEADER], "1000", "{trailers:?}");
        assert!(
            trailers["grpc-message"]
                .to_str()
                .unwrap()
                .contains("response_memory"),
            "{trailers:?}"
        );
        assert!(matches!(poll(&mut body), Poll::Ready(None)));
        assert_eq!(responses.memory.in_use(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_not_taken_within_the_timeout_is_cut_and_freed() {
        let responses = responses(1 << 20);
        let mut body = Delivery::new(body(4 * SLICE, true), None, &responses);
        // hyper holds the first slice, waiting for a window that never opens.
        let Poll::Ready(Some(Ok(first))) = poll(&mut body) else {
            panic!("no first slice")
        };
        assert_eq!(responses.memory.in_use(), 4 * SLICE);
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert_eq!(responses.memory.in_use(), 4 * SLICE, "not yet");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            responses.memory.in_use(),
            SLICE,
            "all but the slice hyper holds"
        );
        let Poll::Ready(Some(Err(status))) = poll(&mut body) else {
            panic!("not reset")
        };
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        drop(first);
        assert_eq!(responses.memory.in_use(), 0);
    }
}
