//! Request bodies handed to tonic one whole gRPC message at a time, each byte charged to the
//! server's request memory, compressed messages inflated (where the service takes them), a
//! message longer than the service decodes refused at its header, and the whole request due
//! within the server's message timeout.
//!
//! tonic's decoder reserves the length a message's 5-byte header declares as soon as it reads
//! the header, before the bytes arrive. With TensorFlow's message limit (2 GiB), which the
//! server keeps, a 16-byte request declaring a 2-GiB message made the server allocate 2 GiB
//! (found by the `task_server` fuzz target). Here each message's bytes are held, without
//! copying, until all of them have arrived, so tonic's reservation is never more than what the
//! peer really sent; and what is held counts against
//! [`Limits::request_memory`](crate::Limits::request_memory), so many slow or large requests
//! together cannot hold more than it either.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::task::JoinHandle;
use tokio::time::Sleep;
use tonic::body::Body;
use tonic::codegen::{Service, http};
use tonic::server::NamedService;

use crate::inflate::{Encoding, MAX_INFLATED_SIZE};
use crate::request_memory::{Charge, RequestMemory};

/// A gRPC message's header: a compression flag and a 32-bit big-endian length.
const HEADER: usize = 5;

/// A tonic service whose requests reach it one whole message at a time, charged to the
/// server's request memory and due within its message timeout
/// ([`Guard::service`](crate::Guard::service)); add it to the server's `Routes` in place of
/// the service.
#[derive(Clone, Debug)]
pub struct Guarded<S> {
    inner: S,
    memory: RequestMemory,
    timeout: Duration,
    max_message: usize,
    inflating: bool,
}

impl<S> Guarded<S> {
    /// `inner`, its requests charged to `memory`, due whole within `timeout`, and refused
    /// (`OUT_OF_RANGE`) at the header of a message longer than `max_message`.
    pub(crate) fn new(
        inner: S,
        memory: RequestMemory,
        timeout: Duration,
        max_message: usize,
    ) -> Self {
        Self {
            inner,
            memory,
            timeout,
            max_message,
            inflating: false,
        }
    }

    /// Inflates the requests compressed with gzip or deflate here, each inflated byte
    /// charged to the request memory, and hands them to the service as plain ones (tonic
    /// would inflate a message up to the decode limit before charging anything). Without
    /// it, compressed requests are left to tonic, which refuses them unless the service
    /// accepts compression.
    #[must_use]
    pub fn inflating(mut self) -> Self {
        self.inflating = true;
        self
    }
}

impl<S: NamedService> NamedService for Guarded<S> {
    const NAME: &'static str = S::NAME;
}

impl<S: Service<http::Request<Body>>> Service<http::Request<Body>> for Guarded<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let encoding = if self.inflating {
            Encoding::take_from(request.headers_mut())
        } else {
            None
        };
        let charge = self.memory.charge();
        let (timeout, max_message) = (self.timeout, self.max_message);
        self.inner.call(request.map(|body| {
            Body::new(
                WholeMessages::new(body, charge, encoding, timeout).with_max_message(max_message),
            )
        }))
    }
}

/// A whole message to yield, or one being inflated.
enum Piece {
    Data(Bytes),
    /// Inflating runs on tokio's blocking threads: a message of 30 MB inflated from 30 KB
    /// takes tens of milliseconds of CPU, which would stall every other request on the
    /// runtime thread. The request's charge travels with it and comes back.
    Inflating(JoinHandle<(Result<Bytes, tonic::Status>, Charge)>),
}

/// A request body that yields its data only in whole gRPC messages, inflated if they came
/// compressed.
pub(crate) struct WholeMessages {
    /// The longest message passed on: tonic's decode limit of the service.
    max_message: usize,
    inner: Body,
    /// Chunks of the message still arriving.
    held: Vec<Bytes>,
    /// Whole messages, to yield in order.
    ready: VecDeque<Piece>,
    /// The bytes of the current message's header seen so far.
    header: [u8; HEADER],
    header_seen: usize,
    /// The current message's bytes still to arrive after its header.
    body_left: u64,
    ended: bool,
    /// What this request holds of the server's request memory; given back when it is dropped
    /// (tonic drops the body once the request's message is decoded).
    charge: Charge,
    /// How the request's compressed messages are inflated (`grpc-encoding`).
    encoding: Option<Encoding>,
    /// When the request must have arrived whole.
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl WholeMessages {
    /// `inner`, charged to `charge`, inflated by `encoding`, due whole within `timeout`
    /// (needs a tokio runtime).
    pub(crate) fn new(
        inner: Body,
        charge: Charge,
        encoding: Option<Encoding>,
        timeout: Duration,
    ) -> Self {
        Self {
            max_message: usize::MAX,
            inner,
            held: Vec::new(),
            ready: VecDeque::new(),
            header: [0; HEADER],
            header_seen: 0,
            body_left: 0,
            ended: false,
            charge,
            encoding,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }

    /// Refuses, at its header, a message longer than `max_message` (the service's decode
    /// limit): holding its bytes would only make the server wait for what tonic refuses.
    pub(crate) fn with_max_message(mut self, max_message: usize) -> Self {
        self.max_message = max_message;
        self
    }

    /// Takes in `chunk`, moving every message it completes to `ready`.
    fn take(&mut self, mut chunk: Bytes) -> Result<(), tonic::Status> {
        self.charge.add(chunk.len())?;
        let mut at = 0;
        while at < chunk.len() {
            if self.header_seen < HEADER {
                let n = (HEADER - self.header_seen).min(chunk.len() - at);
                self.header[self.header_seen..self.header_seen + n]
                    .copy_from_slice(&chunk[at..at + n]);
                self.header_seen += n;
                at += n;
                if self.header_seen < HEADER {
                    break;
                }
                let len = u32::from_be_bytes(self.header[1..].try_into().expect("4 bytes"));
                if usize::try_from(len).is_ok_and(|len| len > self.max_message) {
                    // tonic's wording for a message past its decode limit.
                    return Err(tonic::Status::out_of_range(format!(
                        "Error, decoded message length too large: found {len} bytes, the limit \
                         is: {} bytes",
                        self.max_message
                    )));
                }
                self.body_left = u64::from(len);
            } else {
                let n = self.body_left.min((chunk.len() - at) as u64);
                self.body_left -= n;
                at += n as usize;
            }
            if self.header_seen == HEADER && self.body_left == 0 {
                // A message ends at `at`: it and everything held before it may go.
                let last = chunk.split_to(at);
                at = 0;
                self.header_seen = 0;
                match self.encoding {
                    Some(encoding) if self.header[0] == 1 => {
                        let parts: Vec<Bytes> = self.held.drain(..).chain([last]).collect();
                        let mut charge = self.charge.split_off_all();
                        self.ready
                            .push_back(Piece::Inflating(tokio::task::spawn_blocking(move || {
                                let mut message =
                                    Vec::with_capacity(parts.iter().map(Bytes::len).sum());
                                parts
                                    .iter()
                                    .for_each(|part| message.extend_from_slice(part));
                                drop(parts);
                                let inflated = encoding.inflate(
                                    &message[HEADER..],
                                    MAX_INFLATED_SIZE,
                                    &mut charge,
                                );
                                (inflated, charge)
                            })));
                    }
                    // Plain, or compressed with no encoding named: tonic refuses the latter.
                    _ => {
                        self.ready.extend(self.held.drain(..).map(Piece::Data));
                        self.ready.push_back(Piece::Data(last));
                    }
                }
            }
        }
        if !chunk.is_empty() {
            self.held.push(chunk);
        }
        Ok(())
    }
}

impl HttpBody for WholeMessages {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        loop {
            match self.ready.front_mut() {
                Some(Piece::Data(_)) => {
                    let Some(Piece::Data(chunk)) = self.ready.pop_front() else {
                        unreachable!("just matched")
                    };
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Some(Piece::Inflating(job)) => {
                    let done = ready!(Pin::new(job).poll(cx));
                    self.ready.pop_front();
                    let (inflated, charge) = done.map_err(|_| {
                        tonic::Status::internal("inflating the request's message failed")
                    })?;
                    self.charge.absorb(charge);
                    return Poll::Ready(Some(inflated.map(Frame::data)));
                }
                None => {}
            }
            if self.ended {
                return Poll::Ready(if self.held.is_empty() && self.header_seen == 0 {
                    None
                } else {
                    Some(Err(tonic::Status::internal(
                        "the request ended inside a gRPC message",
                    )))
                });
            }
            if self.deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(format!(
                    "the request did not arrive whole within {:?} (the server's message_timeout)",
                    self.timeout
                )))));
            }
            match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.take(data)?,
                    // Trailers: passed on once every message before them has gone.
                    Err(frame) if self.held.is_empty() && self.header_seen == 0 => {
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Err(_) => self.ended = true,
                },
                Some(Err(status)) => return Poll::Ready(Some(Err(status))),
                None => self.ended = true,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_empty()
            && self.held.is_empty()
            && self.header_seen == 0
            && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::StreamBody;
    use tonic::codegen::tokio_stream::{self, StreamExt};

    use super::*;

    /// Three messages (3, 0 and 4 bytes of payload).
    const MESSAGES: &[u8] = &[
        0, 0, 0, 0, 3, 7, 8, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 1, 2, 3, 4,
    ];

    /// Polls `body` until it is pending or done: the data it yields, and whether it ended (or
    /// failed, with `Err`).
    fn drain(body: &mut WholeMessages) -> (Vec<u8>, Result<bool, tonic::Status>) {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut data = Vec::new();
        loop {
            match Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => data.extend_from_slice(&frame.into_data().unwrap()),
                Poll::Ready(Some(Err(status))) => return (data, Err(status)),
                Poll::Ready(None) => return (data, Ok(true)),
                Poll::Pending => return (data, Ok(false)),
            }
        }
    }

    /// A body of `chunks`, then pending forever when `open`, else ended.
    fn body(chunks: Vec<&'static [u8]>, open: bool) -> WholeMessages {
        let chunks = tokio_stream::iter(chunks)
            .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from_static(c))));
        let inner = if open {
            Body::new(StreamBody::new(chunks.chain(tokio_stream::pending())))
        } else {
            Body::new(StreamBody::new(chunks))
        };
        let memory = RequestMemory::new(1 << 20);
        WholeMessages::new(inner, memory.charge(), None, Duration::from_secs(60))
    }

    #[tokio::test]
    async fn whole_messages_pass_however_they_are_cut() {
        for cut in 0..=MESSAGES.len() {
            for second in cut..=MESSAGES.len() {
                let parts = vec![
                    &MESSAGES[..cut],
                    &MESSAGES[cut..second],
                    &MESSAGES[second..],
                ];
                let (data, ended) = drain(&mut body(parts, false));
                assert_eq!(data, MESSAGES, "cut at {cut} and {second}");
                assert!(ended.unwrap());
            }
        }
    }

    #[tokio::test]
    async fn a_message_is_held_until_all_of_it_came() {
        // Two whole messages, the third's header and half its payload, then nothing yet.
        let (data, ended) = drain(&mut body(vec![&MESSAGES[..8], &MESSAGES[8..20]], true));
        assert_eq!(data, &MESSAGES[..13], "only the first two messages");
        assert!(!ended.unwrap());
        // A header declaring 2 GiB and a few bytes, then the end: refused, never passed on.
        let (data, ended) = drain(&mut body(vec![&[0, 0x7f, 0xff, 0xff, 0xff, 1, 2]], false));
        assert!(data.is_empty());
        assert_eq!(ended.unwrap_err().code(), tonic::Code::Internal);
    }

    #[tokio::test]
    async fn what_is_held_counts_against_the_request_memory() {
        let memory = RequestMemory::new(16);
        let open = |chunks: Vec<&'static [u8]>| {
            let chunks = tokio_stream::iter(chunks)
                .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from_static(c))))
                .chain(tokio_stream::pending());
            let inner = Body::new(StreamBody::new(chunks));
            WholeMessages::new(inner, memory.charge(), None, Duration::from_secs(60))
        };
        // 13 bytes of a message declaring 100: held, and charged.
        let mut first = open(vec![&[0, 0, 0, 0, 100, 1, 2, 3, 4, 5, 6, 7, 8]]);
        assert!(!drain(&mut first).1.unwrap());
        // 8 more would make 21 of the 16 bytes: refused, naming the limit.
        let mut second = open(vec![&[0, 0, 0, 0, 100, 1, 2, 3]]);
        let err = drain(&mut second).1.unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(
            err.message().contains("request_memory"),
            "{}",
            err.message()
        );
        // Given back when the first request is dropped.
        drop(first);
        let mut third = open(vec![&[0, 0, 0, 0, 100, 1, 2, 3]]);
        assert!(!drain(&mut third).1.unwrap());
    }

    #[tokio::test]
    async fn compressed_messages_are_inflated_and_passed_on_plain() {
        use std::io::Write;
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gzip.write_all(&[7; 1000]).unwrap();
        let payload = gzip.finish().unwrap();
        let mut message = vec![1];
        message.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        message.extend_from_slice(&payload);
        let message: &'static [u8] = message.leak();
        let memory = RequestMemory::new(1 << 20);
        // Cut in three, so the inflated message is put together from held parts.
        let parts = [&message[..3], &message[3..10], &message[10..]];
        let chunks = tokio_stream::iter(parts)
            .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from_static(c))));
        let inner = Body::new(StreamBody::new(chunks));
        let body = WholeMessages::new(
            inner,
            memory.charge(),
            Some(Encoding::Gzip),
            Duration::from_secs(60),
        );
        // Inflated on a blocking thread: waited for.
        use http_body_util::BodyExt;
        let data = body.collect().await.unwrap().to_bytes();
        assert_eq!(&data[..5], &[0, 0, 0, 0x03, 0xe8], "plain, 1,000 bytes");
        assert!(data[5..].iter().all(|&b| b == 7));
        assert_eq!(data.len(), 1005);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_not_whole_by_the_timeout_fails() {
        let memory = RequestMemory::new(1 << 20);
        let chunks = tokio_stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from_static(&[
            0, 0, 0, 0, 9, 1,
        ])))])
        .chain(tokio_stream::pending());
        let inner = Body::new(StreamBody::new(chunks));
        let mut body = WholeMessages::new(inner, memory.charge(), None, Duration::from_secs(60));
        assert!(!drain(&mut body).1.unwrap(), "waiting before the timeout");
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(!drain(&mut body).1.unwrap(), "still waiting at 59 s");
        tokio::time::advance(Duration::from_secs(2)).await;
        let err = drain(&mut body).1.unwrap_err();
        assert_eq!(err.code(), tonic::Code::DeadlineExceeded);
        assert!(
            err.message().contains("message_timeout"),
            "{}",
            err.message()
        );
    }
}
