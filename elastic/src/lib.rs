//! # elastic — the rendezvous of tfcluster's elastic launch
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod job_config;
mod layout;
mod node_range;
mod outcome;
mod round;

pub use error::Error;
pub use job_config::{ConfigError, JobConfig, MAX_TASKS, MAX_TASKS_PER_NODE};
pub use layout::{Layout, LayoutError, LayoutErrorKind};
pub use node_range::{MAX_NODES, NodeRange, NodesError, NodesErrorKind};
pub use outcome::{EndReason, Failure, JobDone, RoundEnd, RoundStatus, TaskStatus};
pub use round::{Assignment, Member, RoundError, TaskAssignment, assign};
