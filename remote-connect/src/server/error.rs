//! Errors of the server side: starting a [`TaskServer`](crate::TaskServer) and looking up
//! what its contexts hold.

use std::net::SocketAddr;

/// What went wrong starting or querying a [`TaskServer`](crate::TaskServer).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The job or task is not in the cluster, or the cluster is invalid.
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// The listening socket could not be bound.
    #[error("cannot bind {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A device's type does not make a valid TensorFlow device name (a TensorFlow client
    /// aborts on such a name, so it is never served).
    #[error("invalid device {device}")]
    InvalidDevice {
        /// The device, `TYPE:ID`.
        device: String,
        /// Why the name is invalid.
        #[source]
        source: device_filter::Error,
    },
    /// The same `TYPE:ID` was given twice (a TensorFlow client refuses a task whose names
    /// repeat).
    #[error("device {device} is listed twice")]
    DuplicateDevice {
        /// The device, `TYPE:ID`.
        device: String,
    },
    /// GPU discovery ([`cluster_resolver::gpus`]: NVML or `nvidia-smi`) failed, hung past its
    /// deadline or answered what cannot be read.
    #[error("GPU discovery failed")]
    Gpus(#[source] cluster_resolver::gpus::Error),
    /// A `ServerDef` handed to [`TaskServer::from_server_def`](crate::TaskServer::from_server_def)
    /// is unusable.
    #[error("invalid ServerDef: {reason}")]
    InvalidServerDef {
        /// What is wrong with it.
        reason: String,
    },
    /// No context has this id (TensorFlow's wording).
    #[error(
        "Unable to find a context_id matching the specified one ({0}). Perhaps the worker was restarted, or the context was GC'd?"
    )]
    UnknownContext(u64),
    /// The context was not given this device (TensorFlow's wording): device filters hid it, or
    /// it does not exist.
    #[error("{0} unknown device.")]
    UnknownDevice(String),
    /// The server's TLS could not be set up.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    #[error("cannot set up TLS")]
    Tls(#[source] tonic::transport::Error),
    /// The gRPC server stopped with an error.
    #[error("the gRPC server failed")]
    Serve(#[source] tonic::transport::Error),
}
