//! The client side: [`Context`], TensorFlow's `experimental_connect_to_cluster` for Rust.

mod channel;
mod close;
mod close_connection;
mod cluster;
mod connection;
mod context;
mod create_request;
mod device_handle;
mod discovery;
mod events;
mod fan_out;
mod fetch;
mod keep_alive;
mod local;
mod master;
mod ops;
mod options;
mod releases;
mod remote_tensor;
mod requests;
mod reset;
mod resolve;
mod target;
mod transport;
mod update;
mod visible;

pub(crate) use channel::{Deadline, TaskChannel};
pub use context::{Context, LogicalDevice};
pub use device_handle::DeviceHandle;
pub(crate) use discovery::status_of_address;
pub use events::{TaskEvent, TaskHealth};
pub use ops::{Batch, Outputs, Pending};
pub use options::{ConnectOptions, Progress};
pub use remote_tensor::RemoteTensor;
pub use target::ConnectTarget;
pub(crate) use transport::Transport;
