//! [`ConfigError`]: why a job's config (nodes, tasks per node, layout) makes no round.

/// A [`JobConfig`](crate::JobConfig) whose parts are each valid but do not fit together, or
/// pass a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Tasks per node is 0 or above [`MAX_TASKS_PER_NODE`](crate::MAX_TASKS_PER_NODE).
    #[error("tasks per node must be from 1 to {limit}, found {tasks_per_node}")]
    TasksPerNode {
        /// The value given.
        tasks_per_node: u32,
        /// The limit.
        limit: u32,
    },
    /// The largest round would have more than [`MAX_TASKS`](crate::MAX_TASKS) tasks.
    #[error(
        "a round of {max_nodes} nodes with {tasks_per_node} tasks each has {} tasks, above the \
         limit of {limit}",
        u64::from(*.max_nodes) * u64::from(*.tasks_per_node)
    )]
    TooManyTasks {
        /// The maximum node count.
        max_nodes: u32,
        /// Tasks per node.
        tasks_per_node: u32,
        /// The limit.
        limit: u32,
    },
    /// The layout places more tasks than the smallest round has.
    #[error(
        "layout {layout:?} places {placed} tasks, but a round of the minimum {min_nodes} nodes \
         with {tasks_per_node} tasks each has {}",
        u64::from(*.min_nodes) * u64::from(*.tasks_per_node)
    )]
    LayoutTooLarge {
        /// The layout, as written.
        layout: String,
        /// The tasks it places.
        placed: u64,
        /// The minimum node count.
        min_nodes: u32,
        /// Tasks per node.
        tasks_per_node: u32,
    },
    /// The layout has no chief and leaves no worker in the smallest round, so no task's
    /// success could end the job.
    #[error(
        "layout {layout:?} has no chief and fills every task of a round of the minimum \
         {min_nodes} nodes: the job ends when the chief (or worker 0) succeeds, so it needs one"
    )]
    NoChiefOrWorker {
        /// The layout, as written.
        layout: String,
        /// The minimum node count.
        min_nodes: u32,
    },
}
