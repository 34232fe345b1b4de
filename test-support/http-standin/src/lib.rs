//! Test support: a loopback HTTP/1.1 server that stands in for the HTTP APIs the resolvers
//! call and for the clouds' instance metadata services, since no real Kubernetes API server,
//! Google API or metadata server can run in the tests.
//!
//! [`HttpServer`] answers every request from a handler and records it; an answer may carry its
//! own headers and may come [later](Response::later), once a future resolves (a long poll).
//! [`kubernetes`] builds the API's documents (pods, pod lists, watch events) as a real API
//! server sends them. Used by cluster-resolver's tests (Kubernetes, GCE, TPU) and the CLI's
//! (`connect --follow --from kubernetes`).
//!
//! Three instance metadata services, each written from its cloud's documentation (cited in
//! its module) and set from the test, for clients that watch for preemption and maintenance
//! notices:
//!
//! - [`GceMetadata`]: Compute Engine's metadata server (`instance/preempted`,
//!   `instance/maintenance-event`, ETags and `?wait_for_change=true` hanging GETs);
//! - [`Ec2Imds`]: EC2's IMDSv2 (session tokens with a TTL, `spot/instance-action`,
//!   `events/recommendations/rebalance`, `events/maintenance/scheduled`);
//! - [`AzureScheduledEvents`]: Azure IMDS's Scheduled Events (`DocumentIncarnation`, events
//!   approved by `StartRequests`).
//!
//! Each refuses requests as its service does (a missing `Metadata-Flavor`, token or `Metadata`
//! header, an `X-Forwarded-For`), and can be made to misbehave for robustness tests:
//! `override_next(path, response)` answers one request with anything (a `503`, garbage, a
//! huge body, never), and `stop()` makes it unreachable.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use http_standin::GceMetadata;
//!
//! let metadata = GceMetadata::start().await;
//! metadata.set("instance/preempted", "TRUE");
//! // A client under test reads GCE_METADATA_HOST=metadata.host() ...
//! assert!(metadata.host().starts_with("127.0.0.1:"));
//! metadata.stop().await;
//! # }
//! ```

pub mod azure_events;
pub mod ec2_imds;
pub mod gce_metadata;
pub mod kubernetes;
mod server;
mod stand_in;

pub use azure_events::AzureScheduledEvents;
pub use ec2_imds::Ec2Imds;
pub use gce_metadata::GceMetadata;
pub use server::{HttpServer, Request, Response};
pub use stand_in::StandIn;
