//! The server side: [`TaskServer`], one task of a cluster that TensorFlow clients (and ours)
//! connect to, like `tf.distribute.Server` for discovery and remote contexts.

mod allow;
mod builder;
mod by_encoding;
mod contexts;
mod contiguous;
mod create_context;
mod eager_service;
mod error;
mod identity;
mod network;
mod state;
mod whole_messages;
mod worker_service;

pub(crate) use builder::{MAX_MESSAGE_SIZE, port_of};
pub use builder::{RunningServer, TaskServer, TaskServerBuilder};
pub use contexts::ContextInfo;
pub use error::{InvalidNetwork, ServerError};
pub use network::Network;
