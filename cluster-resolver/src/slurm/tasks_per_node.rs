//! [`TasksPerNode`]: overriding Slurm's tasks per node, as TensorFlow's `tasks_per_node`.

/// How many tasks run on each node, when not taken from `SLURM_STEP_TASKS_PER_NODE`
/// (TensorFlow's `tasks_per_node` argument: an `int` or a `dict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TasksPerNode {
    /// The same number on every node of `SLURM_STEP_NODELIST`.
    Uniform(u32),
    /// These nodes with these counts; `SLURM_STEP_NODELIST` is not read. The order given is
    /// the node order ranks are laid out in (Slurm's nodelist order), so give it as Slurm
    /// would: TensorFlow sorts a dict's hosts by name instead.
    PerNode(Vec<(String, u32)>),
}

impl TasksPerNode {
    /// [`TasksPerNode::PerNode`] from `(host, tasks)` pairs, in node order.
    ///
    /// ```
    /// use cluster_resolver::TasksPerNode;
    ///
    /// let tpn = TasksPerNode::per_node([("n9", 2), ("n10", 1)]);
    /// assert_eq!(tpn, TasksPerNode::PerNode(vec![("n9".into(), 2), ("n10".into(), 1)]));
    /// ```
    pub fn per_node<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = (S, u32)>,
        S: Into<String>,
    {
        Self::PerNode(nodes.into_iter().map(|(h, n)| (h.into(), n)).collect())
    }
}

impl From<u32> for TasksPerNode {
    fn from(n: u32) -> Self {
        Self::Uniform(n)
    }
}
