//! The rendezvous over gRPC (our own `tfcluster.rendezvous` package, [`crate::proto`]): the
//! only layer that speaks tonic. [`service`] serves a [`Local`](crate::rendezvous::Local)
//! rendezvous as the generated tonic service, [`server`] is [`RendezvousServer`] (that
//! service on a TCP port, over the memory store), [`client`] is the [`Rendezvous`] calls over
//! a tonic stub, [`carrier`] puts a call's token and node secret in its metadata and takes
//! them out, and [`status`] turns the core's [`CallError`] into a gRPC status and back.
//!
//! [`Rendezvous`]: crate::rendezvous::Rendezvous
//! [`CallError`]: crate::rendezvous::CallError

mod carrier;
pub(crate) mod client;
mod server;
mod service;
pub(crate) mod status;

pub use server::MAX_REQUEST_BYTES;
pub use server::{RENDEZVOUS_PORT, RendezvousServer, RendezvousServerBuilder, SHUTDOWN_GRACE};

/// The check that this layer is the only one naming tonic.
#[cfg(test)]
mod boundary;
