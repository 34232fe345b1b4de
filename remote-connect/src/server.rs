//! The server side: [`TaskServer`], one task of a cluster that TensorFlow clients (and ours)
//! connect to, like `tf.distribute.Server` for discovery and remote contexts.

mod builder;
mod contexts;
mod contiguous;
mod eager_routes;
mod eager_service;
mod error;
mod identity;
mod lean_requests;
mod limits;
mod metrics;
mod state;
mod worker_service;

pub(crate) use builder::port_of;
pub use builder::{RunningServer, SHUTDOWN_GRACE, TaskServer, TaskServerBuilder};
pub use contexts::ContextInfo;
pub use error::ServerError;
pub use grpc_guard::{InvalidNetwork, Network};
pub use limits::Limits;
pub(crate) use limits::MAX_MESSAGE_SIZE;
pub use metrics::TaskServerMetrics;
