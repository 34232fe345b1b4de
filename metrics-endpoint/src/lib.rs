//! # metrics-endpoint — Prometheus metrics and a health check on a bounded HTTP port
//!
//! What `--metrics ADDR` serves for tfcluster's long-running commands (`run`, `rendezvous
//! serve`): plain HTTP/1.1 `GET /metrics`, the metrics of a [`prometheus_client`]
//! [`Registry`](prometheus_client::registry::Registry) in OpenMetrics text (content type
//! `application/openmetrics-text; version=1.0.0`, which Prometheus asks for and reads), and
//! `GET /healthz`, 200 `ok` while the [`Health`] flag its owner keeps is set, 503 otherwise.
//! Any other path is 404, any method but GET and HEAD 405, a request with a body 413.
//!
//! The metrics are defined where they are measured (crate `elastic` registers the agent's and
//! the rendezvous's); this crate only serves a registry. It uses the Prometheus project's own
//! client, `prometheus-client` (typed families, label sets as Rust types so label values are
//! bounded by construction, its encoder, so no hand-written exposition), and hyper 1, which
//! tonic already brings.
//!
//! **Who depends on it:** the `tfcluster` CLI. Anything with a `prometheus_client` registry
//! and a tokio runtime may use it.
//!
//! ## Bounds
//!
//! It is a port anyone on the network may reach, so it is bounded ([`Limits`]):
//!
//! - **Connection cap** (32): a new connection past it closes the oldest one still waiting
//!   for its request, so idle connections cannot keep a scrape out, and a flood of new ones
//!   cannot cut off a scrape being answered (when all are being answered, the new one is
//!   closed).
//! - **Header read timeout** (5 s): a request's line and headers arrive within it, or the
//!   connection is closed (against slow clients).
//! - **Request size** (8 KiB of line and headers) and **no body**: a request with one is
//!   answered 413 without reading it.
//! - **Response deadline** (10 s): a connection lives at most this long, answered or not; one
//!   request per connection (no keep-alive).
//!
//! It exposes only what the registry holds: no addresses, tokens or error strings are
//! labels in the registries tfcluster builds.
//!
//! ## Example
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use metrics_endpoint::{Health, Limits, MetricsEndpoint};
//! use prometheus_client::{metrics::counter::Counter, registry::Registry};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut registry = Registry::default();
//! let rounds = Counter::<u64>::default();
//! // The encoder adds `_total` to a counter's name.
//! registry.register("tfcluster_rounds", "Rounds this agent took part in", rounds.clone());
//!
//! let health = Health::new();
//! let serving = MetricsEndpoint::builder(Arc::new(registry), health.clone())
//!     .with_bind("127.0.0.1:0".parse()?)
//!     .with_limits(Limits::default())
//!     .start()
//!     .await?;
//! rounds.inc();
//! println!("scrape http://{}/metrics", serving.local_addr());
//! health.set(false); // /healthz now answers 503
//! serving.shutdown_within(Duration::from_secs(1)).await;
//! # Ok(()) }
//! ```

mod answer;
mod endpoint;
mod error;
mod health;
mod limits;

pub use endpoint::{DEFAULT_BIND, MetricsEndpoint, MetricsEndpointBuilder, Serving};
pub use error::Error;
pub use health::Health;
pub use limits::Limits;
/// The client whose registry this serves, so callers name the same version.
pub use prometheus_client;
