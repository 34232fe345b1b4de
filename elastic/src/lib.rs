//! # elastic — the rendezvous of tfcluster's elastic launch
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod error;
mod job_config;
mod layout;
mod node_range;
mod outcome;
mod resolver;
mod round;
mod server;
mod wire;

mod generated {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    #[rustfmt::skip]
    pub(crate) mod protos {
        include!("generated/mod.rs");
    }
}

/// The rendezvous wire messages and tonic stubs, generated from
/// `proto/tfcluster/rendezvous.proto` (package `tfcluster.rendezvous`): the contract for
/// agents written in other languages.
pub mod proto {
    pub use crate::generated::protos::tfcluster::rendezvous::*;

    /// The `FileDescriptorSet` of `rendezvous.proto`, encoded: what the code was generated
    /// from, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("generated/file_descriptor_set.bin");
}

pub use client::{ClientOptions, Heartbeats, Join, Node, RendezvousClient, Round, Waited};
pub use error::Error;
pub use job_config::{ConfigError, JobConfig, MAX_TASKS, MAX_TASKS_PER_NODE};
pub use layout::{Layout, LayoutError, LayoutErrorKind};
pub use node_range::{MAX_NODES, NodeRange, NodesError, NodesErrorKind};
pub use outcome::{EndReason, Failure, JobDone, RoundEnd, RoundStatus, TaskStatus};
pub use resolver::RendezvousClusterResolver;
pub use round::{Assignment, Member, RoundError, TaskAssignment, assign};
pub use server::{MAX_REQUEST_BYTES, RendezvousServer, ServerOptions};
