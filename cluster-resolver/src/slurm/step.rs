//! Resolving a Slurm step: from the options and the step's variables to the cluster and this
//! task's place in it ([`SlurmStep`]).

use cluster_spec::__private::quote::quote;
use cluster_spec::ClusterSpec;

use super::Error as SlurmError;
use super::jobs::Jobs;
use super::node_names::NodeNames;
use super::placement::{self, Distribution, Slot};
use super::tasks_per_node::TasksPerNode;
use super::vars;
use std::sync::Arc;

use crate::gpus::{self, Count, GpuSource, NodeGpus};
use crate::hostlist::{self, HostList, MAX_BYTES, MAX_HOSTS};
use crate::{Env, Error};

/// Most tasks a step may have: [`MAX_HOSTS`], far above any machine, and a bound on the
/// memory a resolution takes whatever the variables say.
pub const MAX_TASKS: usize = MAX_HOSTS;

/// Most bytes the addresses of a step may add up to: [`MAX_BYTES`], 256 MiB. Bounds the
/// memory of a resolution when node names are long and nodes have many tasks.
pub const MAX_SPEC_BYTES: usize = MAX_BYTES;

/// The resolver's options, TensorFlow's constructor arguments.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) jobs: Option<Vec<(String, u32)>>,
    pub(super) port_base: u16,
    pub(super) gpus_per_node: Option<u32>,
    pub(super) gpus_per_task: Option<u32>,
    pub(super) tasks_per_node: Option<TasksPerNode>,
    pub(super) auto_set_gpu: bool,
    /// Counts the node's GPUs when neither `gpus_per_node` nor `CUDA_VISIBLE_DEVICES` does.
    pub(super) gpu_source: Arc<dyn GpuSource>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            jobs: None,
            port_base: 8888,
            gpus_per_node: None,
            gpus_per_task: None,
            tasks_per_node: None,
            auto_set_gpu: true,
            gpu_source: gpus::host(),
        }
    }
}

/// A resolved Slurm step: the cluster, and where this task (`SLURM_PROCID`) is in it.
///
/// Everything [`SlurmClusterResolver`](super::SlurmClusterResolver) answers comes from one of
/// these, read from the environment in one go, so the answers agree with each other.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmStep {
    spec: ClusterSpec,
    rank: u32,
    task_type: String,
    task_id: u32,
    node: String,
    port: u16,
    distribution: Distribution,
    gpus_per_node: u32,
    gpus_per_task: u32,
    cuda_visible_devices: Option<String>,
}

impl SlurmStep {
    /// The cluster: one job per entry of the jobs map, tasks in rank order.
    pub fn spec(&self) -> &ClusterSpec {
        &self.spec
    }

    /// Consumes the step, keeping the cluster.
    pub fn into_spec(self) -> ClusterSpec {
        self.spec
    }

    /// This task's rank, `SLURM_PROCID`.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// This task's job.
    pub fn task_type(&self) -> &str {
        &self.task_type
    }

    /// This task's index in its job.
    pub fn task_id(&self) -> u32 {
        self.task_id
    }

    /// The node this task runs on (Slurm's node name).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The port this task should listen on: `port_base` plus its index among its node's tasks.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// This task's address in the spec, `node:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.node, self.port)
    }

    /// How Slurm laid the ranks out over the nodes.
    pub fn distribution(&self) -> Distribution {
        self.distribution
    }

    /// GPUs of this task's node.
    pub fn gpus_per_node(&self) -> u32 {
        self.gpus_per_node
    }

    /// GPUs of each task (zero for a CPU-only cluster).
    pub fn gpus_per_task(&self) -> u32 {
        self.gpus_per_task
    }

    /// The `CUDA_VISIBLE_DEVICES` value for this task (`None` without `auto_set_gpu`); see
    /// [`SlurmClusterResolver::cuda_visible_devices`](super::SlurmClusterResolver::cuda_visible_devices).
    pub fn cuda_visible_devices(&self) -> Option<&str> {
        self.cuda_visible_devices.as_deref()
    }
}

/// The nodes of the step in nodelist order, with their task counts, and what they were read
/// from (for messages).
struct Nodes {
    names: NodeNames,
    counts: Vec<u32>,
    source: String,
}

/// Reads the nodes and their task counts: from the override, else `SLURM_STEP_NODELIST` and
/// `SLURM_STEP_TASKS_PER_NODE` (read in that order, as TensorFlow does).
fn nodes(env: &Env, tasks_per_node: Option<&TasksPerNode>) -> Result<Nodes, Error> {
    let nodes = match tasks_per_node {
        Some(TasksPerNode::PerNode(list)) => Nodes {
            names: NodeNames::from_names(list.iter().map(|(h, _)| h.as_str())),
            counts: list.iter().map(|&(_, n)| n).collect(),
            source: "tasks_per_node".to_owned(),
        },
        Some(&TasksPerNode::Uniform(n)) => {
            let list = vars::required(env, vars::STEP_NODELIST)?;
            let names = NodeNames::from_hostlist(&HostList::parse(&list)?);
            Nodes {
                counts: vec![n; names.len()],
                names,
                source: format!(
                    "tasks_per_node {n} on {}={}",
                    vars::STEP_NODELIST,
                    quote(&list, 0)
                ),
            }
        }
        None => {
            let list = vars::required(env, vars::STEP_NODELIST)?;
            let names = NodeNames::from_hostlist(&HostList::parse(&list)?);
            let tpn = vars::required(env, vars::STEP_TASKS_PER_NODE)?;
            let counts = hostlist::expand_tasks_per_node(&tpn)?;
            if counts.len() != names.len() {
                return Err(SlurmError::NodeCountMismatch {
                    nodelist: list,
                    nodes: names.len(),
                    tasks_per_node: tpn,
                    counts: counts.len(),
                }
                .into());
            }
            Nodes {
                names,
                counts,
                source: format!(
                    "{}={} on {}={}",
                    vars::STEP_TASKS_PER_NODE,
                    quote(&tpn, 0),
                    vars::STEP_NODELIST,
                    quote(&list, 0)
                ),
            }
        }
    };
    if let Some(twice) = nodes.names.first_duplicate() {
        return Err(SlurmError::DuplicateNode {
            node: twice.to_owned(),
            origin: nodes.source.clone(),
        }
        .into());
    }
    Ok(nodes)
}

/// Resolves the step from `env`; `count_gpus` runs only when neither `gpus_per_node` nor
/// `CUDA_VISIBLE_DEVICES` says how many GPUs the node has.
pub(super) fn resolve(
    options: &Options,
    env: &Env,
    count_gpus: impl FnOnce() -> Result<Count, gpus::Error>,
) -> Result<SlurmStep, Error> {
    // TensorFlow's order: rank, number of tasks (only without a jobs map), nodes, GPUs, then
    // the consistency checks; so the first missing variable is reported as TF reports it.
    let rank = vars::required_count(env, vars::PROCID)?;
    let (jobs, requested_from) = match &options.jobs {
        Some(jobs) => (Jobs::new(jobs)?, None),
        None => {
            let n = vars::required_count(env, vars::STEP_NUM_TASKS)?;
            (Jobs::all_workers(n), Some(n))
        }
    };
    let nodes = nodes(env, options.tasks_per_node.as_ref())?;
    let assigned: u64 = nodes.counts.iter().map(|&c| u64::from(c)).sum();
    if assigned > MAX_TASKS as u64 {
        return Err(SlurmError::TooManyTasks {
            tasks: assigned,
            origin: nodes.source,
            max: MAX_TASKS,
        }
        .into());
    }
    let max_per_node = nodes.counts.iter().copied().max().unwrap_or(0);

    let node_gpus = NodeGpus::find(env, options.gpus_per_node, count_gpus)?;
    let gpus_per_node = node_gpus.count();
    let gpus_per_task = node_gpus.per_task(max_per_node, options.gpus_per_task)?;

    if jobs.total() != assigned {
        let requested = match requested_from {
            Some(n) => format!("{}={n}", vars::STEP_NUM_TASKS),
            None => format!(
                "jobs {}",
                cluster_spec::__private::quote::excerpt(&jobs.describe(), 0)
            ),
        };
        return Err(SlurmError::TaskCountMismatch {
            requested: jobs.total(),
            assigned,
            detail: format!("requested by {requested}; assigned by {}", nodes.source),
        }
        .into());
    }
    if requested_from.is_none() && options.tasks_per_node.is_none() {
        // With a jobs map TensorFlow does not read SLURM_STEP_NUM_TASKS; if Slurm set it, it
        // must still agree with the tasks per node, or the variables are not of one step.
        if let Some(value) = env.get(vars::STEP_NUM_TASKS)? {
            let n = vars::parse_count(vars::STEP_NUM_TASKS, &value)?;
            if u64::from(n) != assigned {
                return Err(SlurmError::NumTasksMismatch {
                    num_tasks: n,
                    assigned,
                    origin: nodes.source,
                }
                .into());
            }
        }
    }
    // `assigned` fits in u32 from here on: it is at most MAX_TASKS.
    if u64::from(rank) >= assigned {
        return Err(SlurmError::RankOutOfRange {
            rank,
            num_tasks: assigned,
        }
        .into());
    }

    let distribution = Distribution::from_variable(env.get(vars::DISTRIBUTION)?.as_deref())?;
    if max_per_node > 0 && u32::from(options.port_base) + (max_per_node - 1) > u32::from(u16::MAX) {
        let busiest = nodes
            .counts
            .iter()
            .position(|&c| c == max_per_node)
            .unwrap_or(0);
        return Err(SlurmError::PortOverflow {
            port_base: options.port_base,
            tasks: max_per_node,
            node: nodes.names.get(busiest).to_owned(),
        }
        .into());
    }
    let slots = placement::place(&nodes.counts, distribution);
    let own = slots[rank as usize];
    let node = nodes.names.get(own.node as usize);
    if let Some(nodename) = env.get(vars::NODENAME)?
        && nodename != node
    {
        return Err(SlurmError::WrongNode {
            rank,
            computed: node.to_owned(),
            nodename,
            distribution: distribution.as_str(),
            origin: nodes.source,
        }
        .into());
    }

    let spec = build_spec(&jobs, &slots, &nodes, options.port_base)?;
    let (task_type, task_id) = jobs
        .task_of(rank)
        .map(|(job, id)| (job.to_owned(), id))
        .ok_or(SlurmError::RankOutOfRange {
            rank,
            num_tasks: assigned,
        })?;
    let cuda_visible_devices = options.auto_set_gpu.then(|| {
        node_gpus
            .of_task(own.local, gpus_per_task)
            .unwrap_or_default()
    });
    Ok(SlurmStep {
        spec,
        rank,
        task_type,
        task_id,
        node: node.to_owned(),
        port: port(options.port_base, own),
        distribution,
        gpus_per_node,
        gpus_per_task,
        cuda_visible_devices,
    })
}

/// The port of the task in `slot`; the caller checked it does not pass 65535.
fn port(port_base: u16, slot: Slot) -> u16 {
    u16::try_from(u32::from(port_base) + slot.local).unwrap_or(u16::MAX)
}

/// Each job, in name order, gets its ranks' addresses.
fn build_spec(
    jobs: &Jobs,
    slots: &[Slot],
    nodes: &Nodes,
    port_base: u16,
) -> Result<ClusterSpec, Error> {
    let names = &nodes.names;
    let mut builder = ClusterSpec::builder();
    // Each `:port` suffix written once: a node has few tasks, and formatting a number per task
    // was a fifth of the time on a 10,000-task step.
    let most_local = slots
        .iter()
        .map(|s| s.local)
        .max()
        .map_or(0, |m| m as usize + 1);
    let suffixes: Vec<String> = (0..most_local as u32)
        .map(|local| format!(":{}", port(port_base, Slot { node: 0, local })))
        .collect();
    // One buffer for every address; each task's is a slice of it.
    let bytes: u64 = slots
        .iter()
        .map(|s| (names.get(s.node as usize).len() + suffixes[s.local as usize].len()) as u64)
        .sum();
    if bytes > MAX_SPEC_BYTES as u64 {
        return Err(SlurmError::SpecTooLarge {
            tasks: slots.len(),
            origin: nodes.source.clone(),
            bytes,
            max: MAX_SPEC_BYTES,
        }
        .into());
    }
    // At most MAX_SPEC_BYTES, so it fits in usize.
    let mut text = String::with_capacity(bytes as usize);
    let mut ends = Vec::with_capacity(slots.len());
    for &slot in slots {
        text.push_str(names.get(slot.node as usize));
        text.push_str(&suffixes[slot.local as usize]);
        ends.push(text.len());
    }
    let address = |rank: usize| {
        let start = if rank == 0 { 0 } else { ends[rank - 1] };
        &text[start..ends[rank]]
    };
    for (job, first, n) in jobs.with_first_rank() {
        let ranks = first as usize..first as usize + n as usize;
        builder = builder.job(job, ranks.map(address));
    }
    Ok(builder.build()?)
}
