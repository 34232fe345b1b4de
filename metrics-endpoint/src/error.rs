//! What can go wrong starting the metrics endpoint.

use std::net::SocketAddr;

/// The endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address could not be bound (in use, not this host's, not permitted).
    #[error("cannot listen for metrics on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
}
