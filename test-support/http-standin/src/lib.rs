//! Test support: a loopback HTTP/1.1 server that stands in for the HTTP APIs the resolvers
//! call, since no real Kubernetes API server or Google API can run in the tests.
//!
//! [`HttpServer`] answers every request from a handler and records it; [`kubernetes`] builds
//! the API's documents (pods, pod lists, watch events) as a real API server sends them. Used
//! by cluster-resolver's tests (Kubernetes, GCE, TPU) and the CLI's (`connect --follow --from
//! kubernetes`).

pub mod kubernetes;
mod server;

pub use server::{HttpServer, Request, Response};
