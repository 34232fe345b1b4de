//! # grpc-guard — a tonic gRPC server hardened to face the network
//!
//! What a tonic server needs before it listens on a port anyone can reach, in one place, so
//! every server of the workspace gets all of it: [`Guard`] serves tonic `Routes` on a bound
//! listener under [`Limits`] and an [`Access`] (an allow list of [`Network`]s and, feature
//! `tls`, mTLS with a [`TlsConfig`]), and returns a [`Serving`] handle (its address, its open connections, its
//! memory in use, a shutdown with a grace period).
//!
//! **Who depends on it:** `remote-connect` (the TaskServer that TensorFlow clients connect
//! to) and `elastic` (the rendezvous server agents join). A program serving tonic services of
//! its own may use it too. It builds on tonic, hyper's HTTP/2 and tokio; it knows no service.
//!
//! ## The guards, and the attacks each answers
//!
//! - **Allow list** ([`Access::with_allow`]): a peer outside it is closed at accept, before TLS
//!   or HTTP/2, and told why in a `GOAWAY`. Against anyone on the network reaching a service
//!   meant for one cluster.
//! - **Connection cap** ([`Limits::with_max_connections`], never above the open-file limit
//!   less 64) and **handshake timeout** ([`Limits::with_handshake_timeout`]): a connection
//!   waiting for its first bytes costs a socket and a small task, and at the cap makes room
//!   for a new one. Against thousands of idle connections exhausting descriptors: seen
//!   against a plain tonic server, 1,100 of them under a 1,024-file limit left a core
//!   spinning on `EMFILE`, no log line, and the legitimate job unable to join. Accepting
//!   that fails for want of descriptors pauses (10 ms doubling to 1 s) instead.
//! - **Idle timeout** ([`Limits::with_idle_timeout`]): a connection with no request in flight
//!   is closed; hyper never closes one that answers its pings.
//! - **Streams per connection** ([`Limits::with_max_streams_per_connection`]) and **reset
//!   streams** ([`Limits::with_max_reset_streams`]): HTTP/2 rapid reset (CVE-2023-44487) is
//!   answered with `GOAWAY`.
//! - **Keep-alive pings** ([`Limits::with_keepalive_interval`]): peers that vanished without
//!   a FIN are found.
//! - **Request memory and message timeout** ([`Limits::with_request_memory`],
//!   [`Limits::with_message_timeout`], [`Guard::service`]): a request reaches its service one
//!   whole message at a time, every byte held is charged, and it must arrive whole within
//!   the timeout. tonic reserves the length a message's header declares before the bytes
//!   come (a 16-byte request declaring 2 GiB made a server allocate 2 GiB), and inflates a
//!   compressed message up to the decode limit (about 2 MB of deflate becomes 2 GiB).
//! - **Response memory and message timeout** ([`Limits::with_response_memory`]): a
//!   response's bytes not yet taken by its connection are charged, and a response not taken
//!   within the message timeout is cut (its stream reset, what it held freed). A response that
//!   would go past the budget fails `RESOURCE_EXHAUSTED` instead of being held. Against
//!   streams that are opened and never read: against a plain tonic server, 48 of them on a
//!   large round held 952 MB and 128 ended the server on a failed allocation.
//! - **Refusals logged once per interval with counts**: thousands of refused connections a
//!   second are a log line every 10 s per cause, not thousands.
//!
//! ## Metrics
//!
//! [`Guard::with_metrics`] counts into a [`GuardMetrics`] registered into a
//! `prometheus_client` registry under the server's prefix:
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `PREFIX_connections` | gauge | | connections held open (admitted, or waiting for their first bytes) |
//! | `PREFIX_refusals_total` | counter | `limit` | connections and calls refused, by the limit: `not_allowed`, `max_connections`, `handshake_timeout` (also the oldest waiting connection evicted at the cap), `accept_failed`, `request_memory`, `response_memory`, and the service's own |
//!
//! ## Features
//!
//! - `tls`: TLS with client certificates (mTLS) with rustls and its ring provider:
//!   [`TlsConfig`], [`Access::with_tls`]. Off by default.
//!
//! ## Example
//!
//! ```
//! use std::time::Duration;
//! use grpc_guard::{Access, Guard, Limits};
//! use tonic::service::Routes;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let limits = Limits::default()
//!     .with_max_connections(4096)
//!     .with_response_memory(64 << 20);
//! let guard = Guard::new("example", "example on 127.0.0.1", limits)
//!     .with_access(Access::default().with_allow(["127.0.0.0/8".parse()?, "::1".parse()?]));
//! // Each service wrapped: Routes::new(guard.service(MyServer::new(..), 64 * 1024)).
//! let serving = guard.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await?, Routes::default())?;
//! assert_ne!(serving.local_addr().port(), 0);
//! serving.shutdown_within(Duration::from_secs(1)).await?;
//! # Ok(()) }
//! ```
//!
//! ## Differences from TensorFlow
//!
//! TensorFlow's gRPC server sets none of these: its streams, connections, buffered requests
//! and responses are unbounded, it never closes an idle connection, and it waits 120 s for a
//! connection's handshake.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod access;
mod admission;
mod connection;
mod delivery;
mod inflate;
mod limits;
mod metrics;
mod network;
mod refusals;
mod request_memory;
mod serve;
mod throttled_log;
#[cfg(feature = "tls")]
mod tls;
mod whole_messages;

pub use access::Access;
pub use limits::Limits;
pub use metrics::GuardMetrics;
pub use network::{InvalidNetwork, Network};
pub use request_memory::{Charge, PUSHBACK_HEADER, RETRY_PUSHBACK, RequestMemory};
pub use serve::{ConnectionCount, Guard, ServeError, Serving};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::{TlsConfig, TlsError};
pub use whole_messages::Guarded;
