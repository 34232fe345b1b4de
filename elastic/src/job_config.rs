//! [`JobConfig`]: what every node of a job must agree on before a round can form.

use std::fmt;

use failure_policy::{RestartPolicy, Strategy};

pub use crate::error::config::ConfigError;
use crate::{BadHostPolicy, Layout, NodeRange};

/// The most tasks one node may run.
pub const MAX_TASKS_PER_NODE: u32 = 256;

/// The most tasks a round may have (`max nodes × tasks per node`): a round's cluster goes to
/// every member, and TensorFlow gives every task the whole cluster in its `TF_CONFIG`, one
/// environment variable, which Linux caps at 131,072 bytes. At the shortest addresses
/// (`h:1`, 6 bytes a task in the JSON) 16,384 tasks take about 98 KB and fit; real
/// addresses (`10.0.0.12:40123`, 18 bytes) fit about 7,000, so the rendezvous also refuses a
/// round whose `TF_CONFIG` would not fit as it forms, naming the sizes.
pub const MAX_TASKS: u32 = 16_384;

/// A job's shape: the node range of its rounds, the tasks each node runs, the layout of
/// non-worker jobs, how many failures it survives, what a failure restarts, and when a host
/// is set aside.
///
/// The first node to join a rendezvous id creates the job with its config; a node joining
/// with a different one is refused, the message naming both values of each field that
/// differs.
///
/// ```
/// use elastic::{JobConfig, NodeRange};
///
/// let config = JobConfig::new("2:4".parse()?, 2)?
///     .with_layout("chief=1,ps=1".parse()?)?
///     .with_max_restarts(3);
/// assert_eq!(
///     config.to_string(),
///     "nodes 2:4, 2 tasks per node, layout \"chief=1,ps=1\", max restarts 3"
/// );
/// // A layout needs room in the smallest round.
/// let err = JobConfig::new(NodeRange::new(1, 4)?, 2)?
///     .with_layout("chief=1,ps=2".parse()?)
///     .unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "layout \"chief=1,ps=2\" places 3 tasks, but a round of the minimum 1 nodes with 2 \
///      tasks each has 2"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobConfig {
    nodes: NodeRange,
    tasks_per_node: u32,
    layout: Layout,
    max_restarts: u32,
    restarts: RestartPolicy,
    bad_hosts: BadHostPolicy,
}

impl JobConfig {
    /// `tasks_per_node` tasks on each of `nodes` nodes, all workers, no restarts.
    pub fn new(nodes: NodeRange, tasks_per_node: u32) -> Result<Self, ConfigError> {
        let config = Self {
            nodes,
            tasks_per_node,
            layout: Layout::workers_only(),
            max_restarts: 0,
            restarts: RestartPolicy::default(),
            bad_hosts: BadHostPolicy::default(),
        };
        config.check()?;
        Ok(config)
    }

    /// With `layout`'s jobs on the first tasks of every round.
    pub fn with_layout(mut self, layout: Layout) -> Result<Self, ConfigError> {
        self.layout = layout;
        self.check()?;
        Ok(self)
    }

    /// With `max_restarts` failures survived: the job fails when a failure would end a round
    /// after that many have.
    pub fn with_max_restarts(mut self, max_restarts: u32) -> Self {
        self.max_restarts = max_restarts;
        self
    }

    /// With failures restarted as `restarts` says (by default: TensorFlow's failure domains,
    /// [`RestartPolicy::default`]).
    pub fn with_restarts(mut self, restarts: RestartPolicy) -> Self {
        self.restarts = restarts;
        self
    }

    /// How failures are restarted.
    pub fn restarts(&self) -> RestartPolicy {
        self.restarts
    }

    /// With hosts whose tasks keep failing set aside as `bad_hosts` says.
    pub fn with_bad_hosts(mut self, bad_hosts: BadHostPolicy) -> Self {
        self.bad_hosts = bad_hosts;
        self
    }

    /// When a host is set aside.
    pub fn bad_hosts(&self) -> BadHostPolicy {
        self.bad_hosts
    }

    /// The job's strategy, as its layout tells ([`Strategy::of_jobs`]).
    pub fn strategy(&self) -> Strategy {
        Strategy::of_jobs(self.layout.jobs().into_iter().map(|(job, _)| job))
    }

    /// The node range of the job's rounds.
    pub fn nodes(&self) -> NodeRange {
        self.nodes
    }

    /// The tasks each node runs.
    pub fn tasks_per_node(&self) -> u32 {
        self.tasks_per_node
    }

    /// The jobs placed on the first tasks.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// How many failures the job survives.
    pub fn max_restarts(&self) -> u32 {
        self.max_restarts
    }

    /// Each field where `other` differs, as `name VALUE (other: VALUE)`, for the message that
    /// refuses a second config on one rendezvous id.
    pub(crate) fn differences(&self, other: &Self) -> Vec<String> {
        let mut out = Vec::new();
        if self.nodes != other.nodes {
            out.push(format!("nodes {} (this node: {})", self.nodes, other.nodes));
        }
        if self.tasks_per_node != other.tasks_per_node {
            out.push(format!(
                "tasks per node {} (this node: {})",
                self.tasks_per_node, other.tasks_per_node
            ));
        }
        if self.layout != other.layout {
            out.push(format!(
                "layout {:?} (this node: {:?})",
                self.layout.to_string(),
                other.layout.to_string()
            ));
        }
        if self.max_restarts != other.max_restarts {
            out.push(format!(
                "max restarts {} (this node: {})",
                self.max_restarts, other.max_restarts
            ));
        }
        if self.restarts != other.restarts {
            out.push(format!("{} (this node: {})", self.restarts, other.restarts));
        }
        if self.bad_hosts != other.bad_hosts {
            out.push(format!(
                "{} (this node: {})",
                self.bad_hosts, other.bad_hosts
            ));
        }
        out
    }

    fn check(&self) -> Result<(), ConfigError> {
        let tpn = self.tasks_per_node;
        if tpn == 0 || tpn > MAX_TASKS_PER_NODE {
            return Err(ConfigError::TasksPerNode {
                tasks_per_node: tpn,
                limit: MAX_TASKS_PER_NODE,
            });
        }
        if u64::from(self.nodes.max()) * u64::from(tpn) > u64::from(MAX_TASKS) {
            return Err(ConfigError::TooManyTasks {
                max_nodes: self.nodes.max(),
                tasks_per_node: tpn,
                limit: MAX_TASKS,
            });
        }
        let smallest = u64::from(self.nodes.min()) * u64::from(tpn);
        let placed = self.layout.placed_tasks();
        if placed > smallest {
            return Err(ConfigError::LayoutTooLarge {
                layout: self.layout.to_string(),
                placed,
                min_nodes: self.nodes.min(),
                tasks_per_node: tpn,
            });
        }
        if placed == smallest && !self.layout.has_chief() {
            return Err(ConfigError::NoChiefOrWorker {
                layout: self.layout.to_string(),
                min_nodes: self.nodes.min(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for JobConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nodes {}, {} tasks per node, layout {:?}, max restarts {}",
            self.nodes,
            self.tasks_per_node,
            self.layout.to_string(),
            self.max_restarts
        )?;
        // Said only when chosen, so the common config reads as it always has.
        if self.restarts != RestartPolicy::default() {
            write!(f, ", {}", self.restarts)?;
        }
        if self.bad_hosts != BadHostPolicy::default() {
            write!(f, ", {}", self.bad_hosts)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(nodes: &str, tpn: u32, layout: &str) -> Result<JobConfig, ConfigError> {
        JobConfig::new(nodes.parse().unwrap(), tpn)?.with_layout(layout.parse().unwrap())
    }

    #[test]
    fn limits_and_fit() {
        assert_eq!(
            config("1:2", 0, "").unwrap_err().to_string(),
            "tasks per node must be from 1 to 256, found 0"
        );
        assert_eq!(
            config("1:4096", 5, "").unwrap_err().to_string(),
            "a round of 4096 nodes with 5 tasks each has 20480 tasks, above the limit of 16384"
        );
        assert_eq!(
            config("2:4", 1, "ps=2").unwrap_err().to_string(),
            "layout \"ps=2\" has no chief and fills every task of a round of the minimum 2 \
             nodes: the job ends when the chief (or worker 0) succeeds, so it needs one"
        );
        // A chief alone may fill the smallest round; ps plus a worker too.
        config("1:4", 1, "chief=1").unwrap();
        config("2:4", 2, "ps=3").unwrap();
    }

    #[test]
    fn differences_name_both_values() {
        let a = config("2:4", 2, "chief=1").unwrap();
        let b = config("2:3", 2, "").unwrap().with_max_restarts(1);
        assert_eq!(
            a.differences(&b),
            [
                "nodes 2:4 (this node: 2:3)",
                "layout \"chief=1\" (this node: \"\")",
                "max restarts 0 (this node: 1)"
            ]
        );
        assert!(a.differences(&a.clone()).is_empty());
    }
}
