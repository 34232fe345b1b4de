//! The cluster of a round, computed from its members alone, so that the rendezvous and every
//! agent derive the same `ClusterSpec` and the same task for each process.
//!
//! The rule: members in the order given (the rendezvous orders them by when each node first
//! joined the job, so a node keeps its place, and rank 0 its tasks, for as long as it stays);
//! member `r` holds tasks `r * tasks_per_node ..= (r + 1) * tasks_per_node - 1`, in its ports'
//! order; the layout's jobs take the first tasks in the layout's order, and every other task
//! is a `worker`, numbered from 0 in task order.

use cluster_spec::{ClusterSpec, TaskId};

use crate::JobConfig;
pub use crate::error::round::RoundError;

/// A node of a round: its id in the job, the host its tasks are reached at, one port per task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Member {
    /// The node's id in the job.
    pub node_id: String,
    /// The host other tasks reach this node's tasks at (a name, IPv4 or IPv6 address).
    pub host: String,
    /// One port per local task, in local task order.
    pub ports: Vec<u16>,
    /// A name for messages (the host name); may be empty.
    pub name: String,
}

impl Member {
    /// A member with no name.
    pub fn new(node_id: impl Into<String>, host: impl Into<String>, ports: Vec<u16>) -> Self {
        Self {
            node_id: node_id.into(),
            host: host.into(),
            ports,
            name: String::new(),
        }
    }

    /// The address of the member's task on `port`: `host:port`, an IPv6 host in brackets.
    pub fn address(&self, port: u16) -> String {
        task_address(&self.host, port)
    }
}

/// `host:port`, an IPv6 host in brackets as a cluster address needs.
pub(crate) fn task_address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One task of a round: its TensorFlow identity and where it runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TaskAssignment {
    /// Its job (`worker`, or a job of the layout) and index in the job.
    pub task: TaskId,
    /// The rank of the node that runs it.
    pub node_rank: u32,
    /// Its index among the node's tasks (which of the node's ports it serves on).
    pub local_index: u32,
    /// Its `host:port`.
    pub address: String,
}

impl TaskAssignment {
    /// `HOST/JOB:INDEX`, the name the agent puts before the task's output lines, on the node
    /// whose tasks are reached at `host`.
    pub fn name_on(&self, host: &str) -> String {
        format!("{host}/{}", self.task.short_name())
    }
}

/// The cluster of a round and every task in it, from [`assign`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assignment {
    spec: ClusterSpec,
    tasks: Vec<TaskAssignment>,
    tasks_per_node: u32,
    first_job: &'static str,
}

impl Assignment {
    /// The round's cluster.
    pub(crate) fn cluster_spec(&self) -> &ClusterSpec {
        &self.spec
    }

    /// Every task, in task order (node by node).
    pub(crate) fn tasks(&self) -> &[TaskAssignment] {
        &self.tasks
    }

    /// The tasks of the node of rank `rank`, in local order; empty for a rank not in the
    /// round.
    pub(crate) fn node_tasks(&self, rank: u32) -> &[TaskAssignment] {
        let tpn = self.tasks_per_node as usize;
        let start = (rank as usize).saturating_mul(tpn);
        self.tasks
            .get(start..start.saturating_add(tpn))
            .unwrap_or(&[])
    }

    /// The task whose success ends the job: the chief when the layout places one, else
    /// worker 0 (TensorFlow's rule for who is chief).
    pub(crate) fn first_task(&self) -> &TaskAssignment {
        // `assign` puts the chief first, or, without one, keeps a worker (the config checks
        // that the layout leaves one), so this task always exists.
        self.tasks
            .iter()
            .find(|t| t.task.job == self.first_job && t.task.task == 0)
            .unwrap_or(&self.tasks[0])
    }
}

/// The cluster of a round of `config` with `members`, in rank order.
pub(crate) fn assign(config: &JobConfig, members: &[Member]) -> Result<Assignment, RoundError> {
    let nodes = config.nodes();
    let tpn = config.tasks_per_node();
    if members.len() < nodes.min() as usize || members.len() > nodes.max() as usize {
        return Err(RoundError::NodeCount {
            count: members.len(),
            min: nodes.min(),
            max: nodes.max(),
        });
    }
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    for m in members {
        if m.ports.len() != tpn as usize {
            return Err(RoundError::PortCount {
                node_id: m.node_id.clone(),
                ports: m.ports.len(),
                tasks_per_node: tpn,
            });
        }
        if !seen.insert(m.node_id.as_str()) {
            return Err(RoundError::DuplicateNode {
                node_id: m.node_id.clone(),
            });
        }
    }

    // Each task's job, in task order: the layout's jobs first, then workers.
    let placed = config.layout().jobs();
    let mut jobs = placed
        .iter()
        .flat_map(|&(job, count)| (0..count).map(move |index| (job, index)))
        .chain((0..).map(|index| ("worker", index)));
    let mut tasks = Vec::with_capacity(members.len() * tpn as usize);
    for (rank, member) in members.iter().enumerate() {
        for (local, &port) in member.ports.iter().enumerate() {
            let (job, index) = jobs.next().unwrap_or(("worker", 0));
            tasks.push(TaskAssignment {
                task: TaskId::new(job, index),
                node_rank: rank as u32,
                local_index: local as u32,
                address: member.address(port),
            });
        }
    }

    let mut builder = ClusterSpec::builder();
    for (job, _) in placed.iter().copied().chain([("worker", 0)]) {
        let addresses: Vec<&str> = tasks
            .iter()
            .filter(|t| t.task.job == job)
            .map(|t| t.address.as_str())
            .collect();
        if !addresses.is_empty() {
            builder = builder.job(job, addresses);
        }
    }
    let spec = builder.build().map_err(|source| {
        // Name the member whose address is invalid: the error names the job and task.
        let node_id = match &source {
            cluster_spec::Error::InvalidAddress { job, task, .. } => tasks
                .iter()
                .find(|t| &t.task.job == job && t.task.task == *task)
                .map(|t| members[t.node_rank as usize].node_id.clone()),
            _ => None,
        }
        .unwrap_or_default();
        RoundError::Address { node_id, source }
    })?;
    let first_job = if config.layout().has_chief() {
        "chief"
    } else {
        "worker"
    };
    Ok(Assignment {
        spec,
        tasks,
        tasks_per_node: tpn,
        first_job,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_places_its_jobs_on_the_first_tasks_and_the_first_task_is_the_chief() {
        let config = JobConfig::new("2:4".parse().unwrap(), 2)
            .unwrap()
            .with_layout("chief=1,ps=1".parse().unwrap())
            .unwrap();
        let members = [
            Member::new("a", "10.0.0.1", vec![2222, 2223]),
            Member::new("b", "10.0.0.2", vec![2222, 2223]),
        ];
        let round = assign(&config, &members).unwrap();
        assert_eq!(
            round.cluster_spec().to_json(),
            r#"{"chief":["10.0.0.1:2222"],"ps":["10.0.0.1:2223"],"worker":["10.0.0.2:2222","10.0.0.2:2223"]}"#
        );
        let mine: Vec<_> = round
            .node_tasks(1)
            .iter()
            .map(|t| (t.task.job.as_str(), t.task.task))
            .collect();
        assert_eq!(mine, [("worker", 0), ("worker", 1)]);
        assert_eq!(round.first_task().task.job, "chief");
    }
    use crate::NodeRange;
    use proptest::prelude::*;

    fn config(nodes: &str, tpn: u32, layout: &str) -> JobConfig {
        JobConfig::new(nodes.parse().unwrap(), tpn)
            .unwrap()
            .with_layout(layout.parse().unwrap())
            .unwrap()
    }

    fn members(n: usize, tpn: u16) -> Vec<Member> {
        (0..n)
            .map(|i| {
                Member::new(
                    format!("n{i}"),
                    format!("h{i}"),
                    (0..tpn).map(|p| 2000 + p).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn workers_only_are_consecutive_per_node() {
        let round = assign(&config("1:4", 2, ""), &members(3, 2)).unwrap();
        assert_eq!(
            round.cluster_spec().to_json(),
            r#"{"worker":["h0:2000","h0:2001","h1:2000","h1:2001","h2:2000","h2:2001"]}"#
        );
        assert_eq!(round.first_task().address, "h0:2000");
        assert!(round.node_tasks(3).is_empty());
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let m = [Member::new("a", "::1", vec![1])];
        let round = assign(&config("1", 1, ""), &m).unwrap();
        assert_eq!(round.tasks()[0].address, "[::1]:1");
    }

    #[test]
    fn refusals_name_the_node() {
        let c = config("2:3", 2, "");
        assert_eq!(
            assign(&c, &members(1, 2)).unwrap_err().to_string(),
            "a round of 1 nodes is outside the job's node range 2:3"
        );
        let mut m = members(2, 2);
        m[1].ports.pop();
        assert_eq!(
            assign(&c, &m).unwrap_err().to_string(),
            "node \"n1\" gives 1 ports for 2 tasks per node"
        );
        let mut m = members(2, 2);
        m[1].host = "bad host".into();
        let err = assign(&c, &m).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("node \"n1\" has an invalid address"),
            "{err}"
        );
        let mut m = members(2, 2);
        m[1].node_id = "n0".into();
        assert_eq!(
            assign(&c, &m).unwrap_err().to_string(),
            "node \"n0\" is a member twice"
        );
    }

    proptest! {
        /// The same members give the same cluster, and it follows the rule: tasks consecutive
        /// per node, the layout's jobs first, workers after, every address once.
        #[test]
        fn deterministic_and_by_the_rule(
            nodes in 1usize..12,
            tpn in 1u16..5,
            chief in any::<bool>(),
            ps in 0u32..4,
        ) {
            let min = nodes as u32;
            let mut layout = Vec::new();
            if chief { layout.push("chief=1".to_owned()); }
            if ps > 0 { layout.push(format!("ps={ps}")); }
            let layout = layout.join(",");
            let Ok(config) = JobConfig::new(NodeRange::new(min, min + 2).unwrap(), u32::from(tpn))
                .and_then(|c| c.with_layout(layout.parse().unwrap()))
            else {
                return Ok(()); // a layout too large for this round size
            };
            let m = members(nodes, tpn);
            let a = assign(&config, &m).unwrap();
            prop_assert_eq!(&assign(&config, &m.clone()).unwrap(), &a);
            let spec = a.cluster_spec();
            prop_assert_eq!(&ClusterSpec::from_json(&spec.to_json()).unwrap(), spec);
            prop_assert_eq!(spec.total_tasks(), nodes * usize::from(tpn));
            let placed = u32::from(chief) + ps;
            for (t, task) in a.tasks().iter().enumerate() {
                prop_assert_eq!(task.node_rank as usize, t / usize::from(tpn));
                prop_assert_eq!(task.local_index as usize, t % usize::from(tpn));
                let address = spec.task_address(&task.task.job, task.task.task).unwrap();
                prop_assert_eq!(address, task.address.as_str());
                let t = t as u32;
                let expect = if chief && t == 0 {
                    ("chief", 0)
                } else if t < placed {
                    ("ps", t - u32::from(chief))
                } else {
                    ("worker", t - placed)
                };
                prop_assert_eq!((task.task.job.as_str(), task.task.task), expect);
            }
            prop_assert_eq!(a.first_task().task.job.as_str(), if chief { "chief" } else { "worker" });
        }
    }
}
