//! How large a request may grow once decompressed.
//!
//! A message as sent may be as large as TensorFlow's limit (2 GiB), and [`WholeMessages`]
//! (`whole_messages.rs`) makes memory follow the bytes actually received. A gzip or deflate
//! message is different: tonic inflates it up to the same limit, and deflate's ratio is about
//! 1,000 to 1, so 2 MB sent could make a server hold 2 GiB. TensorFlow's gRPC has that
//! exposure; here a compressed request may inflate to [`MAX_DECOMPRESSED_SIZE`] and no more.
//! Every request a TaskServer takes is small (a `CreateContext` for 10,000 tasks of 8 devices
//! is about 8 MB), so only a hostile one reaches it.
//!
//! [`WholeMessages`]: super::whole_messages::WholeMessages

use std::task::{Context, Poll, ready};

use tonic::body::Body;
use tonic::codegen::{Service, http};

use super::MAX_MESSAGE_SIZE;

/// The most a compressed request may inflate to: 64 MiB.
pub(crate) const MAX_DECOMPRESSED_SIZE: usize = 64 << 20;

/// A service built twice, with the decoding limit for requests sent plain and for compressed
/// ones; [`Guarded`](super::whole_messages::Guarded) sends each request to the one its
/// `grpc-encoding` calls for.
#[derive(Clone)]
pub(crate) struct ByEncoding<S> {
    plain: S,
    compressed: S,
}

impl<S> ByEncoding<S> {
    /// `build(limit)` makes the service that decodes messages of up to `limit` bytes.
    pub(crate) fn new(build: impl Fn(usize) -> S) -> Self {
        Self {
            plain: build(MAX_MESSAGE_SIZE),
            compressed: build(MAX_DECOMPRESSED_SIZE),
        }
    }
}

impl<S: Service<http::Request<Body>>> ByEncoding<S> {
    /// Ready when both are.
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        ready!(self.plain.poll_ready(cx))?;
        self.compressed.poll_ready(cx)
    }

    /// The service for `request`: the compressed one when its `grpc-encoding` is not
    /// `identity`.
    pub(crate) fn pick(&mut self, request: &http::Request<Body>) -> &mut S {
        let compressed = request
            .headers()
            .get("grpc-encoding")
            .is_some_and(|encoding| encoding != "identity");
        if compressed {
            &mut self.compressed
        } else {
            &mut self.plain
        }
    }
}
