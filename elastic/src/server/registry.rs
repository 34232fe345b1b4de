//! The rendezvous's state: jobs by rendezvous id, their nodes and rounds, and every
//! transition. Calls and the clock drive it; `now` is passed in, so tests step time instead
//! of sleeping, and no lock is held across an await (the server holds it only inside these
//! methods).

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use cluster_spec::quote::quote;
use tokio::sync::watch;

use crate::JobConfig;
use crate::error::duration;
use crate::outcome::{EndReason, Failure, JobDone, RoundEnd, RoundStatus, TaskStatus};
use crate::round::{Assignment, Member, assign, task_address};

/// The most bytes of a task's standard error kept for the job's story (its end).
pub(crate) const MAX_STDERR_TAIL: usize = 8 * 1024;
/// Ended rounds remembered per job, so a late heartbeat still learns why its round ended.
const ENDS_KEPT: usize = 32;
/// The longest rendezvous id, node id, host or name accepted.
const MAX_ID_LEN: usize = 128;
const MAX_HOST_LEN: usize = 253;

/// The timings and limits of a registry.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How long a round with at least `min` nodes waits for another before it closes.
    pub(crate) last_call: Duration,
    /// How long a node may be silent before it is gone.
    pub(crate) timeout: Duration,
    /// How many jobs one rendezvous serves at once.
    pub(crate) max_jobs: usize,
}

/// Why a call is refused; the server turns each kind into its gRPC code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// The request itself is invalid (`INVALID_ARGUMENT`).
    #[error("{0}")]
    InvalidArgument(String),
    /// The job cannot take the request in its state (`FAILED_PRECONDITION`).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The job or node is unknown (`NOT_FOUND`).
    #[error("{0}")]
    NotFound(String),
    /// Another node holds the address (`ALREADY_EXISTS`).
    #[error("{0}")]
    AlreadyExists(String),
    /// A limit of the rendezvous is reached (`RESOURCE_EXHAUSTED`).
    #[error("{0}")]
    ResourceExhausted(String),
}

/// A join, with its host already defaulted to the peer's address.
#[derive(Debug, Clone)]
pub(crate) struct JoinArgs {
    pub(crate) rdzv_id: String,
    pub(crate) config: JobConfig,
    /// `None` for a new node without an id of its own.
    pub(crate) node_id: Option<String>,
    pub(crate) host: String,
    pub(crate) ports: Vec<u16>,
    pub(crate) name: String,
}

/// What a join answers.
#[derive(Debug, Clone)]
pub(crate) struct Joined {
    pub(crate) node_id: String,
    pub(crate) round: u64,
    pub(crate) note: String,
    pub(crate) host: String,
}

/// A round as it formed: fixed for its whole life.
#[derive(Debug)]
pub(crate) struct FormedRound {
    pub(crate) number: u64,
    pub(crate) restart_count: u32,
    pub(crate) config: JobConfig,
    pub(crate) members: Vec<Member>,
    pub(crate) assignment: Assignment,
    pub(crate) cluster_json: String,
    ranks: HashMap<String, u32>,
}

impl FormedRound {
    fn rank(&self, node_id: &str) -> Option<u32> {
        self.ranks.get(node_id).copied()
    }
}

/// What the round a node waits for still waits for.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) round: u64,
    pub(crate) waiting: u32,
    pub(crate) detail: String,
}

/// What a wait finds.
#[derive(Debug, Clone)]
pub(crate) enum Waited {
    /// A round holding the node, newer than the one it last saw.
    Round { round: Arc<FormedRound>, rank: u32 },
    /// No such round yet.
    Pending(Pending),
    /// The job is done.
    Done(JobDone),
}

#[derive(Debug)]
enum Phase {
    /// Nodes are waiting for the next round.
    Forming,
    Running(Arc<FormedRound>),
    Done(JobDone),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeState {
    /// Waiting for the next round, since then.
    Waiting(Instant),
    /// A member of the running round.
    Member,
    /// Its round ended and it has not joined again.
    Idle,
}

#[derive(Debug)]
struct Node {
    /// Order of the node's first join in the job: the order of members in a round.
    seq: u64,
    host: String,
    ports: Vec<u16>,
    name: String,
    last_seen: Instant,
    state: NodeState,
    /// The latest round the node was a member of.
    last_round: Option<Arc<FormedRound>>,
}

impl Node {
    fn describe(&self, id: &str) -> String {
        if self.name.is_empty() {
            format!("node {id} on {}", self.host)
        } else {
            format!("node {id} ({}) on {}", self.name, self.host)
        }
    }
}

#[derive(Debug)]
struct Job {
    id: String,
    config: JobConfig,
    nodes: HashMap<String, Node>,
    next_seq: u64,
    phase: Phase,
    rounds_formed: u64,
    restart_count: u32,
    ended: VecDeque<RoundEnd>,
    first_failure: Option<Failure>,
    /// When the last node started waiting: a round with `min` nodes closes `last_call` after.
    last_arrival: Instant,
    /// Since when the job has had no node; it is forgotten after the timeout.
    empty_since: Option<Instant>,
    changed: watch::Sender<u64>,
}

/// Every job of a rendezvous.
#[derive(Debug)]
pub(crate) struct Registry {
    settings: Settings,
    jobs: HashMap<String, Job>,
    random: RandomState,
}

impl Registry {
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            jobs: HashMap::new(),
            random: RandomState::new(),
        }
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A receiver that changes whenever job `rdzv_id` does.
    pub(crate) fn subscribe(&self, rdzv_id: &str) -> Option<watch::Receiver<u64>> {
        self.jobs.get(rdzv_id).map(|j| j.changed.subscribe())
    }

    pub(crate) fn join(&mut self, args: JoinArgs, now: Instant) -> Result<Joined, Refusal> {
        check_text("rendezvous id", &args.rdzv_id, MAX_ID_LEN)?;
        if let Some(id) = &args.node_id {
            check_node_id(id)?;
        }
        check_text("host", &args.host, MAX_HOST_LEN)?;
        if !args.name.is_empty() {
            // Names go into every message about the node: no spaces or control characters.
            check_text("node name", &args.name, MAX_HOST_LEN)?;
        }
        let tpn = args.config.tasks_per_node() as usize;
        if args.ports.len() != tpn {
            return Err(Refusal::InvalidArgument(format!(
                "the node gives {} ports for {tpn} tasks per node",
                args.ports.len()
            )));
        }
        // The address check is cluster-spec's, so a node the rendezvous takes always fits a
        // round's cluster.
        let addresses: Vec<String> = args
            .ports
            .iter()
            .map(|&p| task_address(&args.host, p))
            .collect();
        ClusterSpec::builder()
            .job("worker", &addresses)
            .build()
            .map_err(|e| Refusal::InvalidArgument(e.to_string()))?;

        if !self.jobs.contains_key(&args.rdzv_id) {
            if self.jobs.len() >= self.settings.max_jobs {
                return Err(Refusal::ResourceExhausted(format!(
                    "this rendezvous serves {} jobs, its limit; {:?} cannot start",
                    self.jobs.len(),
                    args.rdzv_id
                )));
            }
            self.jobs.insert(
                args.rdzv_id.clone(),
                Job::new(args.rdzv_id.clone(), args.config.clone(), now),
            );
        }
        let node_id = match args.node_id.clone() {
            Some(id) => id,
            None => self.new_node_id(&args.rdzv_id),
        };
        let settings = self.settings.clone();
        let job = self.jobs.get_mut(&args.rdzv_id).expect("inserted above");
        job.join(node_id, args, now, &settings)
    }

    pub(crate) fn wait(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        after_round: u64,
        now: Instant,
    ) -> Result<Waited, Refusal> {
        let timeout = self.settings.timeout;
        let last_call = self.settings.last_call;
        let job = self.job(rdzv_id)?;
        let Some(node) = job.nodes.get_mut(node_id) else {
            if let Phase::Done(done) = &job.phase {
                return Ok(Waited::Done(done.clone()));
            }
            return Err(unknown_node(rdzv_id, node_id, timeout));
        };
        node.last_seen = now;
        if let Some(round) = node.last_round.as_ref().filter(|r| r.number > after_round) {
            let rank = round.rank(node_id).unwrap_or_default();
            return Ok(Waited::Round {
                round: Arc::clone(round),
                rank,
            });
        }
        if let Phase::Done(done) = &job.phase {
            return Ok(Waited::Done(done.clone()));
        }
        if !matches!(node.state, NodeState::Waiting(_)) {
            return Err(Refusal::FailedPrecondition(format!(
                "node {node_id} is not waiting for a round after round {after_round}: join \
                 first"
            )));
        }
        Ok(Waited::Pending(job.pending(now, last_call)))
    }

    pub(crate) fn heartbeat(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        round: u64,
        now: Instant,
    ) -> Result<RoundStatus, Refusal> {
        let timeout = self.settings.timeout;
        let job = self.job(rdzv_id)?;
        if let Phase::Done(done) = &job.phase {
            return Ok(RoundStatus::JobDone(done.clone()));
        }
        let node = job
            .nodes
            .get_mut(node_id)
            .ok_or_else(|| unknown_node(rdzv_id, node_id, timeout))?;
        node.last_seen = now;
        if let Phase::Running(current) = &job.phase
            && current.number == round
        {
            return if node.state == NodeState::Member {
                Ok(RoundStatus::Running)
            } else {
                Err(Refusal::FailedPrecondition(format!(
                    "node {node_id} is not a member of round {round}"
                )))
            };
        }
        job.ended_round(round).map(RoundStatus::Ended)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn report(
        &mut self,
        rdzv_id: &str,
        node_id: &str,
        round: u64,
        local_task: u32,
        status: TaskStatus,
        stderr_tail: String,
        now: Instant,
    ) -> Result<(bool, String), Refusal> {
        let timeout = self.settings.timeout;
        let job = self.job(rdzv_id)?;
        if let Phase::Done(done) = &job.phase {
            return Ok((false, format!("not counted: {done}")));
        }
        let node = job
            .nodes
            .get_mut(node_id)
            .ok_or_else(|| unknown_node(rdzv_id, node_id, timeout))?;
        node.last_seen = now;
        let current = match &job.phase {
            Phase::Running(r) if r.number == round && node.state == NodeState::Member => {
                Arc::clone(r)
            }
            _ => {
                return Ok((
                    false,
                    format!("not counted: round {round} is not running with node {node_id}"),
                ));
            }
        };
        let tpn = current.config.tasks_per_node();
        if local_task >= tpn {
            return Err(Refusal::InvalidArgument(format!(
                "local task {local_task} does not exist: nodes run {tpn} tasks"
            )));
        }
        let rank = current.rank(node_id).unwrap_or_default();
        let task = &current.assignment.node_tasks(rank)[local_task as usize];
        let who = node.describe(node_id);
        let task_name = format!("{}:{}", task.job, task.index);
        if status.success() {
            if task == current.assignment.first_task() {
                let detail = format!("task {task_name} ({who}) succeeded");
                job.end_round(EndReason::JobSucceeded, detail, now);
                return Ok((true, "the job succeeded".into()));
            }
            return Ok((
                true,
                format!(
                    "task {task_name} succeeded; the job ends when task {}:0 does",
                    current.assignment.first_task().job
                ),
            ));
        }
        let failure = Failure {
            round,
            node_id: node_id.to_owned(),
            host: node.host.clone(),
            name: node.name.clone(),
            local_task,
            job: task.job.clone(),
            index: task.index,
            status,
            stderr_tail: tail(stderr_tail, MAX_STDERR_TAIL),
        };
        let detail = failure.to_string();
        job.first_failure.get_or_insert(failure);
        job.end_round(EndReason::TaskFailed, detail, now);
        Ok((true, format!("round {round} ended")))
    }

    pub(crate) fn leave(&mut self, rdzv_id: &str, node_id: &str, now: Instant) {
        let Some(job) = self.jobs.get_mut(rdzv_id) else {
            return;
        };
        let Some(node) = job.nodes.remove(node_id) else {
            return;
        };
        if node.state == NodeState::Member {
            let detail = format!("{} left", node.describe(node_id));
            job.end_round(EndReason::NodeLeft, detail, now);
        }
        job.notify();
    }

    /// What the clock does: nodes silent past the timeout are gone (ending their round),
    /// rounds whose last call passed close, jobs without nodes past the timeout are forgotten.
    pub(crate) fn tick(&mut self, now: Instant) {
        let settings = &self.settings;
        for job in self.jobs.values_mut() {
            let lost: Vec<String> = job
                .nodes
                .iter()
                .filter(|(_, n)| now.saturating_duration_since(n.last_seen) > settings.timeout)
                .map(|(id, _)| id.clone())
                .collect();
            if !lost.is_empty() {
                let mut members = Vec::new();
                for id in &lost {
                    let node = job.nodes.remove(id).expect("listed above");
                    tracing::info!(rdzv_id = %job.id, "{} is gone: silent for more than {}",
                        node.describe(id), duration(settings.timeout));
                    if node.state == NodeState::Member {
                        members.push(node.describe(id));
                    }
                }
                if !members.is_empty() {
                    let detail = format!(
                        "{} silent for more than {}",
                        members.join(", "),
                        duration(settings.timeout)
                    );
                    job.end_round(EndReason::NodeLost, detail, now);
                }
                job.notify();
            }
            if job.try_close(now, settings) {
                job.notify();
            }
            if job.nodes.is_empty() {
                job.empty_since.get_or_insert(now);
            } else {
                job.empty_since = None;
            }
        }
        self.jobs.retain(|_, job| {
            job.empty_since
                .is_none_or(|since| now.saturating_duration_since(since) <= settings.timeout)
        });
    }

    fn job(&mut self, rdzv_id: &str) -> Result<&mut Job, Refusal> {
        self.jobs.get_mut(rdzv_id).ok_or_else(|| {
            Refusal::NotFound(format!(
                "no job with rendezvous id {}: join first",
                quote(rdzv_id, 0)
            ))
        })
    }

    fn new_node_id(&self, rdzv_id: &str) -> String {
        let next = self.jobs.get(rdzv_id).map_or(0, |j| j.next_seq);
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(next);
        hasher.write_u128(
            std::time::SystemTime::UNIX_EPOCH
                .elapsed()
                .unwrap_or_default()
                .as_nanos(),
        );
        format!("n{next}-{:08x}", hasher.finish() as u32)
    }
}

impl Job {
    fn new(id: String, config: JobConfig, now: Instant) -> Self {
        Self {
            id,
            config,
            nodes: HashMap::new(),
            next_seq: 0,
            phase: Phase::Forming,
            rounds_formed: 0,
            restart_count: 0,
            ended: VecDeque::new(),
            first_failure: None,
            last_arrival: now,
            empty_since: None,
            changed: watch::Sender::new(0),
        }
    }

    fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn join(
        &mut self,
        node_id: String,
        args: JoinArgs,
        now: Instant,
        settings: &Settings,
    ) -> Result<Joined, Refusal> {
        if self.config != args.config {
            return Err(Refusal::FailedPrecondition(format!(
                "rendezvous {:?} runs a job with another config: {}",
                self.id,
                self.config.differences(&args.config).join(", ")
            )));
        }
        if let Phase::Done(done) = &self.phase {
            return Err(Refusal::FailedPrecondition(format!(
                "rendezvous {:?} is finished ({done}); a new job needs a new rendezvous id",
                self.id
            )));
        }
        // Two tasks on one address would make a cluster TensorFlow cannot start.
        for (other_id, other) in &self.nodes {
            if *other_id != node_id
                && other.host == args.host
                && let Some(port) = args.ports.iter().find(|p| other.ports.contains(p))
            {
                return Err(Refusal::AlreadyExists(format!(
                    "address {} is held by {} (heard from {} ago); it is free when that node \
                     leaves or is silent for {}",
                    task_address(&args.host, *port),
                    other.describe(other_id),
                    duration(now.saturating_duration_since(other.last_seen)),
                    duration(settings.timeout)
                )));
            }
        }

        let seq = self.next_seq;
        let node = self.nodes.entry(node_id.clone()).or_insert_with(|| Node {
            seq,
            host: String::new(),
            ports: Vec::new(),
            name: String::new(),
            last_seen: now,
            state: NodeState::Idle,
            last_round: None,
        });
        if node.seq == seq {
            self.next_seq += 1;
        }
        node.host = args.host;
        node.ports = args.ports;
        node.name = args.name;
        node.last_seen = now;
        let before = node.state;
        if !matches!(before, NodeState::Waiting(_)) {
            node.state = NodeState::Waiting(now);
        }
        let who = node.describe(&node_id);
        let mut note = String::new();
        match before {
            NodeState::Waiting(_) => {}
            NodeState::Member => {
                // Joining again means the node's tasks are gone: its round cannot go on.
                let round = self.rounds_formed;
                let detail = format!("{who} joined again while round {round} ran");
                self.end_round(EndReason::NodeLeft, detail, now);
                self.last_arrival = now;
            }
            NodeState::Idle => {
                self.last_arrival = now;
                if let Phase::Running(current) = &self.phase {
                    let (number, size) = (current.number, current.members.len() as u32);
                    let max = self.config.nodes().max();
                    if size < max {
                        let detail =
                            format!("{who} joined; round {number} had {size} of max {max} nodes");
                        self.end_round(EndReason::NodeJoined, detail, now);
                        note = format!("round {number} ended to take this node in");
                    } else {
                        note = format!(
                            "round {number} is full (max {max} nodes): waiting for a later round"
                        );
                    }
                }
            }
        }
        self.try_close(now, settings);
        self.notify();
        let node = &self.nodes[&node_id];
        let round = match node.last_round.as_ref() {
            Some(r) if node.state == NodeState::Member => r.number,
            _ => self.next_round(),
        };
        if note.is_empty() {
            note = match &self.phase {
                Phase::Running(r) if r.number == round => format!("round {round} formed"),
                _ => self.pending(now, settings.last_call).detail,
            };
        }
        Ok(Joined {
            node_id,
            round,
            note,
            host: node.host.clone(),
        })
    }

    fn next_round(&self) -> u64 {
        self.rounds_formed + 1
    }

    fn waiting(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n.state, NodeState::Waiting(_)))
    }

    fn pending(&self, now: Instant, last_call: Duration) -> Pending {
        let waiting = self.waiting().count() as u32;
        let (min, max) = (self.config.nodes().min(), self.config.nodes().max());
        let round = self.next_round();
        let detail = match &self.phase {
            Phase::Running(r) => format!(
                "round {} is running with {} of max {max} nodes; waiting for round {round}",
                r.number,
                r.members.len()
            ),
            _ if waiting < min => format!(
                "round {round} waits for nodes: {waiting} of min {min} (max {max}) have joined"
            ),
            _ => {
                let left =
                    last_call.saturating_sub(now.saturating_duration_since(self.last_arrival));
                format!(
                    "round {round} has {waiting} of max {max} nodes; it closes when {max} have \
                     joined or {} after the last join ({} left)",
                    duration(last_call),
                    duration(left)
                )
            }
        };
        Pending {
            round,
            waiting,
            detail,
        }
    }

    /// The end of round `round`, which is not the running one.
    fn ended_round(&self, round: u64) -> Result<RoundEnd, Refusal> {
        if let Some(end) = self.ended.iter().find(|e| e.round == round) {
            return Ok(end.clone());
        }
        Err(Refusal::FailedPrecondition(
            if round == 0 || round > self.rounds_formed {
                format!(
                    "round {round} has not formed (the latest is round {})",
                    self.rounds_formed
                )
            } else {
                format!(
                    "round {round} ended long ago (the latest is round {})",
                    self.rounds_formed
                )
            },
        ))
    }

    /// Closes the next round when `max` nodes wait, or at least `min` and the last call has
    /// passed. Returns whether it closed (or the job failed trying).
    fn try_close(&mut self, now: Instant, settings: &Settings) -> bool {
        if !matches!(self.phase, Phase::Forming) {
            return false;
        }
        let (min, max) = (
            self.config.nodes().min() as usize,
            self.config.nodes().max() as usize,
        );
        let mut waiting: Vec<(Instant, u64, &String)> = self
            .nodes
            .iter()
            .filter_map(|(id, n)| match n.state {
                NodeState::Waiting(since) => Some((since, n.seq, id)),
                _ => None,
            })
            .collect();
        let last_call_over = now.saturating_duration_since(self.last_arrival) >= settings.last_call;
        if !(waiting.len() >= max || (waiting.len() >= min && last_call_over)) {
            return false;
        }
        // The first to wait get in; a round lists them in the order they first joined.
        waiting.sort_unstable();
        waiting.truncate(max);
        waiting.sort_unstable_by_key(|&(_, seq, _)| seq);
        let ids: Vec<String> = waiting.into_iter().map(|(_, _, id)| id.clone()).collect();
        let members: Vec<Member> = ids
            .iter()
            .map(|id| {
                let n = &self.nodes[id];
                Member {
                    node_id: id.clone(),
                    host: n.host.clone(),
                    ports: n.ports.clone(),
                    name: n.name.clone(),
                }
            })
            .collect();
        let number = self.next_round();
        let assignment = match assign(&self.config, &members) {
            Ok(a) => a,
            Err(e) => {
                // Every node was checked when it joined, so this is a bug; the job fails with
                // the reason rather than waiting for ever.
                tracing::error!(rdzv_id = %self.id, "round {number} cannot form: {e}");
                self.phase = Phase::Done(JobDone {
                    succeeded: false,
                    detail: format!("round {number} cannot form: {e}"),
                    first_failure: self.first_failure.clone(),
                    round: number,
                });
                return true;
            }
        };
        let cluster_json = assignment.cluster_spec().to_json();
        let ranks = ids
            .iter()
            .enumerate()
            .map(|(r, id)| (id.clone(), r as u32))
            .collect();
        let round = Arc::new(FormedRound {
            number,
            restart_count: self.restart_count,
            config: self.config.clone(),
            members,
            assignment,
            cluster_json,
            ranks,
        });
        for id in &ids {
            let node = self.nodes.get_mut(id).expect("listed above");
            node.state = NodeState::Member;
            node.last_round = Some(Arc::clone(&round));
        }
        tracing::info!(rdzv_id = %self.id, "round {number} formed with {} nodes (restart count {})",
            ids.len(), self.restart_count);
        self.rounds_formed = number;
        self.phase = Phase::Running(round);
        true
    }

    /// Ends the running round: its members must join again; a failure counts against the
    /// restarts, and past `max_restarts` (or on success) the job is done.
    fn end_round(&mut self, reason: EndReason, detail: String, now: Instant) {
        let Phase::Running(round) = &self.phase else {
            return;
        };
        let number = round.number;
        for node in self.nodes.values_mut() {
            if node.state == NodeState::Member {
                node.state = NodeState::Idle;
            }
        }
        if reason.is_failure() {
            self.restart_count += 1;
        }
        tracing::info!(rdzv_id = %self.id, "round {number} ended ({reason}): {detail}");
        let end = RoundEnd {
            round: number,
            reason,
            detail: detail.clone(),
            restart_count: self.restart_count,
        };
        if self.ended.len() == ENDS_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back(end);
        // Survivors join again from now: the last call counts from the end, not from when a
        // node that waited through the round arrived.
        self.last_arrival = now;
        let max_restarts = self.config.max_restarts();
        self.phase = if reason == EndReason::JobSucceeded {
            Phase::Done(JobDone {
                succeeded: true,
                detail,
                first_failure: self.first_failure.clone(),
                round: number,
            })
        } else if reason.is_failure() && self.restart_count > max_restarts {
            Phase::Done(JobDone {
                succeeded: false,
                detail: format!(
                    "{} failures, more than max restarts {max_restarts}; the last: {detail}",
                    self.restart_count
                ),
                first_failure: self.first_failure.clone(),
                round: number,
            })
        } else {
            Phase::Forming
        };
        self.notify();
    }
}

fn unknown_node(rdzv_id: &str, node_id: &str, timeout: Duration) -> Refusal {
    Refusal::NotFound(format!(
        "node {} is not in job {}: it left, or was silent for more than {}; join again",
        quote(node_id, 0),
        quote(rdzv_id, 0),
        duration(timeout)
    ))
}

/// A rendezvous id, host: 1 to `max` bytes, no whitespace or control characters.
fn check_text(what: &str, value: &str, max: usize) -> Result<(), Refusal> {
    let bad = value
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || c.is_control());
    if value.is_empty() || value.len() > max || bad.is_some() {
        let why = match bad {
            Some((at, c)) => format!("{c:?} at byte {at}"),
            None if value.is_empty() => "it is empty".to_owned(),
            None => format!("it is longer than {max} bytes"),
        };
        return Err(Refusal::InvalidArgument(format!(
            "invalid {what} {}: {why}",
            quote(value, bad.map_or(0, |(at, _)| at))
        )));
    }
    Ok(())
}

/// A node id: 1 to 128 bytes of ASCII letters, digits, `.`, `_` and `-`.
fn check_node_id(id: &str) -> Result<(), Refusal> {
    let bad = id
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')));
    if id.is_empty() || id.len() > MAX_ID_LEN || bad.is_some() {
        let why = match bad {
            Some((at, c)) => format!("{c:?} at byte {at}; ids use letters, digits, '.', '_', '-'"),
            None if id.is_empty() => "it is empty".to_owned(),
            None => format!("it is longer than {MAX_ID_LEN} bytes"),
        };
        return Err(Refusal::InvalidArgument(format!(
            "invalid node id {}: {why}",
            quote(id, bad.map_or(0, |(at, _)| at))
        )));
    }
    Ok(())
}

/// The last `max` bytes of `text`, cut on a character boundary.
fn tail(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut start = text.len() - max;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text.drain(..start);
    }
    text
}

#[cfg(test)]
#[path = "registry/tests.rs"]
mod tests;
