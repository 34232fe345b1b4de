//! Request bodies handed to tonic one whole gRPC message at a time.
//!
//! tonic's decoder reserves the length a message's 5-byte header declares as soon as it reads
//! the header, before the bytes arrive. With TensorFlow's message limit (2 GiB), which the
//! server keeps, a 16-byte request declaring a 2-GiB message made the server allocate 2 GiB
//! (found by the `task_server` fuzz target). Here each message's bytes are held, without
//! copying, until all of them have arrived, so tonic's reservation is never more than what the
//! peer really sent.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tonic::body::Body;
use tonic::codegen::{Service, http};
use tonic::server::NamedService;

use super::by_encoding::ByEncoding;

/// A gRPC message's header: a compression flag and a 32-bit big-endian length.
const HEADER: usize = 5;

/// A service (built for plain and for compressed requests, [`ByEncoding`]) whose requests'
/// bodies reach it as [`WholeMessages`].
#[derive(Clone)]
pub(crate) struct Guarded<S>(pub(crate) ByEncoding<S>);

impl<S: NamedService> NamedService for Guarded<S> {
    const NAME: &'static str = S::NAME;
}

impl<S: Service<http::Request<Body>>> Service<http::Request<Body>> for Guarded<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        self.0
            .pick(&request)
            .call(request.map(|body| Body::new(WholeMessages::new(body))))
    }
}

/// A request body that yields its data only in whole gRPC messages.
pub(crate) struct WholeMessages {
    inner: Body,
    /// Chunks of the message still arriving.
    held: Vec<Bytes>,
    /// Chunks of whole messages, to yield.
    ready: VecDeque<Bytes>,
    /// The bytes of the current message's header seen so far.
    header: [u8; HEADER],
    header_seen: usize,
    /// The current message's bytes still to arrive after its header.
    body_left: u64,
    ended: bool,
}

impl WholeMessages {
    pub(crate) fn new(inner: Body) -> Self {
        Self {
            inner,
            held: Vec::new(),
            ready: VecDeque::new(),
            header: [0; HEADER],
            header_seen: 0,
            body_left: 0,
            ended: false,
        }
    }

    /// Takes in `chunk`, moving every message it completes to `ready`.
    fn take(&mut self, mut chunk: Bytes) {
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
                self.body_left = u64::from(len);
            } else {
                let n = self.body_left.min((chunk.len() - at) as u64);
                self.body_left -= n;
                at += n as usize;
            }
            if self.header_seen == HEADER && self.body_left == 0 {
                // A message ends at `at`: it and everything held before it may go.
                self.ready.extend(self.held.drain(..));
                self.ready.push_back(chunk.split_to(at));
                at = 0;
                self.header_seen = 0;
            }
        }
        if !chunk.is_empty() {
            self.held.push(chunk);
        }
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
            if let Some(chunk) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
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
            match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.take(data),
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
        WholeMessages::new(inner)
    }

    #[test]
    fn whole_messages_pass_however_they_are_cut() {
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

    #[test]
    fn a_message_is_held_until_all_of_it_came() {
        // Two whole messages, the third's header and half its payload, then nothing yet.
        let (data, ended) = drain(&mut body(vec![&MESSAGES[..8], &MESSAGES[8..20]], true));
        assert_eq!(data, &MESSAGES[..13], "only the first two messages");
        assert!(!ended.unwrap());
        // A header declaring 2 GiB and a few bytes, then the end: refused, never passed on.
        let (data, ended) = drain(&mut body(vec![&[0, 0x7f, 0xff, 0xff, 0xff, 1, 2]], false));
        assert!(data.is_empty());
        assert_eq!(ended.unwrap_err().code(), tonic::Code::Internal);
    }
}
