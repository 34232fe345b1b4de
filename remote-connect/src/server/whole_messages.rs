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

/// A gRPC message's header: a compression flag and a 32-bit big-endian length.
const HEADER: usize = 5;

/// A service whose requests' bodies reach it as [`WholeMessages`].
#[derive(Clone)]
pub(crate) struct Guarded<S>(pub(crate) S);

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
