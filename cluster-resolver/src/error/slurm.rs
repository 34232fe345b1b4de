//! [`Error`]: why the Slurm resolver cannot build the step's cluster.

use cluster_spec::__private::quote::{excerpt, quote};

/// What the Slurm resolver ([`SlurmClusterResolver`](crate::SlurmClusterResolver)) finds wrong
/// with the step it runs in. Its variables' own syntax errors are the crate's
/// ([`Error::MissingVariable`](crate::Error::MissingVariable), hostlist and tasks-per-node
/// errors); these are the step's failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A variable Slurm sets in every step is missing (TensorFlow's wording).
    #[error("{name} not found in environment. Not running inside a SLURM step?")]
    VariableMissing {
        /// The variable, e.g. `SLURM_PROCID`.
        name: String,
    },
    /// `SLURM_STEP_NODELIST` and `SLURM_STEP_TASKS_PER_NODE` name different numbers of nodes.
    #[error(
        "SLURM_STEP_NODELIST={} names {nodes} nodes but \
         SLURM_STEP_TASKS_PER_NODE={} gives task counts for {counts}",
        quote(.nodelist, 0),
        quote(.tasks_per_node, 0)
    )]
    NodeCountMismatch {
        /// `SLURM_STEP_NODELIST`.
        nodelist: String,
        /// Its number of nodes.
        nodes: usize,
        /// `SLURM_STEP_TASKS_PER_NODE`.
        tasks_per_node: String,
        /// Its number of counts.
        counts: usize,
    },
    /// A node is named twice in the step's node list (or the `tasks_per_node` option).
    #[error("node {} appears twice in {origin}", quote(.node, 0))]
    DuplicateNode {
        /// The node.
        node: String,
        /// Where the nodes came from, with its value.
        origin: String,
    },
    /// The jobs map names a job twice.
    #[error("the jobs map names job '{}' twice", excerpt(.job, 0))]
    DuplicateJob {
        /// The job.
        job: String,
    },
    /// The step has more tasks than `slurm::MAX_TASKS`.
    #[error("{tasks} tasks ({origin}) are more than the {max} a step may have")]
    TooManyTasks {
        /// The number of tasks.
        tasks: u64,
        /// Where the counts came from, with its value.
        origin: String,
        /// The limit, `slurm::MAX_TASKS`.
        max: usize,
    },
    /// The jobs map (or `SLURM_STEP_NUM_TASKS`) asks for another number of tasks than the
    /// nodes hold (TensorFlow's wording first).
    #[error("Requested {requested} tasks but only {assigned} were assigned. ({detail})")]
    TaskCountMismatch {
        /// Tasks the jobs map asks for.
        requested: u64,
        /// Tasks the nodes hold.
        assigned: u64,
        /// Where both numbers came from.
        detail: String,
    },
    /// `SLURM_STEP_NUM_TASKS` disagrees with the tasks per node (checked when a jobs map is
    /// given, where TensorFlow does not read it).
    #[error("SLURM_STEP_NUM_TASKS={num_tasks} but {origin} holds {assigned} tasks")]
    NumTasksMismatch {
        /// `SLURM_STEP_NUM_TASKS`.
        num_tasks: u32,
        /// The tasks the nodes hold.
        assigned: u64,
        /// Where the counts came from, with its value.
        origin: String,
    },
    /// `SLURM_PROCID` is not a rank of the step.
    #[error("SLURM_PROCID={rank} is not a task of this step, which has {num_tasks} tasks")]
    RankOutOfRange {
        /// `SLURM_PROCID`.
        rank: u32,
        /// The step's tasks.
        num_tasks: u64,
    },
    /// `SLURM_DISTRIBUTION` names a layout this resolver cannot reproduce.
    #[error(
        "SLURM_DISTRIBUTION={} is not supported: only block (or unset) and cyclic task \
         distributions can be reproduced from the step's variables",
        quote(.value, 0)
    )]
    UnsupportedDistribution {
        /// `SLURM_DISTRIBUTION`.
        value: String,
    },
    /// `port_base` plus the tasks of a node goes past port 65535.
    #[error(
        "port_base {port_base} + {tasks} tasks on node {} goes past port 65535",
        quote(.node, 0)
    )]
    PortOverflow {
        /// The `port_base` option.
        port_base: u16,
        /// Tasks on the busiest node.
        tasks: u32,
        /// That node.
        node: String,
    },
    /// This rank was computed to run on another node than `SLURMD_NODENAME` says.
    #[error(
        "rank {rank} (SLURM_PROCID) runs on node {} by the {distribution} layout of \
         {origin}, but SLURMD_NODENAME={}: the cluster would give this task another \
         node's address",
        quote(.computed, 0),
        quote(.nodename, 0)
    )]
    WrongNode {
        /// `SLURM_PROCID`.
        rank: u32,
        /// The node the layout gives it.
        computed: String,
        /// `SLURMD_NODENAME`.
        nodename: String,
        /// The distribution used, `block` or `cyclic`.
        distribution: &'static str,
        /// Where the nodes and counts came from, with their values.
        origin: String,
    },
    /// The step's addresses would add up to more than `slurm::MAX_SPEC_BYTES` bytes.
    #[error(
        "the {tasks} addresses of {origin} add up to {bytes} bytes, more than the {max} a \
         cluster may have"
    )]
    SpecTooLarge {
        /// The number of tasks.
        tasks: usize,
        /// Where the nodes and counts came from, with their values.
        origin: String,
        /// The bytes the addresses would take.
        bytes: u64,
        /// The limit, `slurm::MAX_SPEC_BYTES`.
        max: usize,
    },
}
