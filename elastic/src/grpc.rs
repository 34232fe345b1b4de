//! The rendezvous over gRPC (our own `tfcluster.rendezvous` package, [`crate::proto`]): the
//! only layer that speaks tonic. [`service`] serves a [`Local`](crate::rendezvous::Local)
//! rendezvous as the generated tonic service, [`server`] is [`RendezvousServer`] (that
//! service on a TCP port, over the memory store), [`client`] is the [`Rendezvous`] calls over
//! a tonic stub, and [`status`] turns the core's [`CallError`] into a gRPC status and back.
//!
//! [`Rendezvous`]: crate::rendezvous::Rendezvous
//! [`CallError`]: crate::rendezvous::CallError

pub(crate) mod client;
mod server;
mod service;
pub(crate) mod status;

pub use server::MAX_REQUEST_BYTES;
pub use server::{RendezvousServer, ServerOptions};
