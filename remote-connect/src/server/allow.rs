//! The accept loop's filter for [`TaskServerBuilder::allow`](crate::TaskServerBuilder::allow):
//! a connection from a peer outside the allowed networks is closed as soon as it is accepted,
//! before TLS or HTTP/2 read a byte of it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::net::TcpStream;
use tonic::codegen::tokio_stream::Stream;

use super::network::Network;

/// The accepted connections of `inner` whose peer is in `allowed` (all when `None`).
pub(crate) struct Allowed<S> {
    inner: S,
    allowed: Option<Arc<[Network]>>,
    /// The task served, for the log.
    task: Arc<str>,
}

impl<S> Allowed<S> {
    pub(crate) fn new(inner: S, allowed: Option<Arc<[Network]>>, task: Arc<str>) -> Self {
        Self {
            inner,
            allowed,
            task,
        }
    }
}

impl<S> Stream for Allowed<S>
where
    S: Stream<Item = io::Result<TcpStream>> + Unpin,
{
    type Item = io::Result<TcpStream>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let stream = match Pin::new(&mut self.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(stream))) => stream,
                other => return other,
            };
            let Some(allowed) = &self.allowed else {
                return Poll::Ready(Some(Ok(stream)));
            };
            match stream.peer_addr() {
                Ok(peer) if allowed.iter().any(|n| n.contains(peer.ip())) => {
                    return Poll::Ready(Some(Ok(stream)));
                }
                // Dropping the stream closes the connection.
                Ok(peer) => {
                    tracing::warn!(task = %self.task, %peer, "refused a connection from a peer outside the allowed networks");
                }
                // Already gone.
                Err(error) => {
                    tracing::debug!(task = %self.task, %error, "dropped a connection with no peer address");
                }
            }
        }
    }
}
