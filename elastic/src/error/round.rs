//! [`RoundError`]: why a round's members make no cluster.

/// Members that cannot form a round of a [`JobConfig`](crate::JobConfig) under the crate's
/// assignment rule. The rendezvous checks every node when it joins, so a round it forms
/// always assigns; this is for a round read from elsewhere (a rendezvous of another version,
/// a stored record).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// Fewer members than the minimum or more than the maximum.
    #[error("a round of {count} nodes is outside the job's node range {min}:{max}")]
    NodeCount {
        /// The members given.
        count: usize,
        /// The job's minimum.
        min: u32,
        /// The job's maximum.
        max: u32,
    },
    /// A member does not give one port per task.
    #[error("node {node_id:?} gives {ports} ports for {tasks_per_node} tasks per node")]
    PortCount {
        /// The member.
        node_id: String,
        /// The ports it gives.
        ports: usize,
        /// The job's tasks per node.
        tasks_per_node: u32,
    },
    /// Two members are the same node.
    #[error("node {node_id:?} is a member twice")]
    DuplicateNode {
        /// The member.
        node_id: String,
    },
    /// A member's host and port make no task address.
    #[error("node {node_id:?} has an invalid address")]
    Address {
        /// The member.
        node_id: String,
        /// Why the address is invalid (it names the address).
        #[source]
        source: cluster_spec::Error,
    },
}
