//! [`RendezvousClient`]: an agent's side of the rendezvous: join, wait for a round, heartbeat,
//! report, leave. Every call has a deadline; a rendezvous that cannot be reached is retried
//! for [`ClientOptions::with_retry_for`] and then reported as [`Error::Unreachable`].

mod backend;
pub(crate) mod call_failed;
mod heartbeats;
mod operator;
mod progress;
pub(crate) mod quick_answers;
mod round;
mod watched;

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
#[cfg(feature = "etcd")]
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cloud_notices::Notice;
use tokio::sync::watch;
use tokio::time::Instant;

pub use heartbeats::Heartbeats;
pub use progress::WaitProgress;
pub use round::Round;
pub use watched::Watched;

use crate::error::duration;
use crate::grpc::client::GrpcClient;
use crate::host_notice::HostNotice;
use crate::outcome::{JobDone, ReportAnswer, RoundStatus, TaskStatus};
use crate::received::Received;
use crate::rendezvous::registry::MAX_STDERR_TAIL;
use crate::rendezvous::{
    Beat, CallError, Credentials, Found, JoinArgs, Leave, NodeSecret, Observe, Rendezvous, Report,
    Wait,
};
use crate::watched_round::WatchedRound;
use crate::{Error, JobConfig, Token};
use backend::Backend;
use call_failed::CallFailed;
use quick_answers::QuickAnswers;

/// The longest single `WaitRound` or `WatchRounds` long poll the client asks for; the server
/// may cap it lower.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(10);

/// The longest a server's retry pushback makes a call wait before its next try.
const MAX_PUSHBACK: Duration = Duration::from_secs(5);

/// The least time a retry gets, even when the retries' time is up.
const LAST_TRY: Duration = Duration::from_millis(100);

/// Deadlines of a [`RendezvousClient`], its TLS ([`with_tls`](Self::with_tls)) and the job's
/// token ([`with_token`](Self::with_token)).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub(crate) connect_timeout: Duration,
    pub(crate) rpc_timeout: Duration,
    retry_for: Duration,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<grpc_guard::TlsConfig>,
    token: Option<Token>,
    /// The cloud's notices for this host, which heartbeats and leaves carry.
    notices: Option<watch::Receiver<Option<Notice>>>,
}

impl Default for ClientOptions {
    /// 5 s to connect, 10 s per call, retried for 60 s while the rendezvous is unreachable.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            rpc_timeout: Duration::from_secs(10),
            retry_for: Duration::from_secs(60),
            #[cfg(feature = "tls")]
            tls: None,
            token: None,
            notices: None,
        }
    }
}

impl ClientOptions {
    /// How long one connection attempt may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one call may take (a long poll: this much past its poll time).
    pub fn with_rpc_timeout(mut self, timeout: Duration) -> Self {
        self.rpc_timeout = timeout;
        self
    }

    /// How long a call keeps retrying while the rendezvous cannot be reached (refused
    /// connections, calls without an answer) before it fails with [`Error::Unreachable`]:
    /// agents started before the rendezvous wait for it this long. A retry gets only what
    /// is left of this time (at least 100 ms), so a call that fails at once fails within
    /// this and a little more; only a first try that hangs (no answer) can take a whole
    /// [`rpc_timeout`](Self::with_rpc_timeout).
    pub fn with_retry_for(mut self, retry_for: Duration) -> Self {
        self.retry_for = retry_for;
        self
    }

    /// Talk to the built-in rendezvous over TLS (mTLS): present this config's certificate,
    /// and accept only a server whose certificate chains to its CA **and names the host of
    /// the rendezvous address** (`HOST` of `HOST:PORT`, a DNS name or an IP address), as
    /// remote-connect's `connect` checks a task. For a server started with
    /// [`Access::with_tls`](grpc_guard::Access::with_tls); the etcd backend has its
    /// own ([`EtcdTls`](crate::EtcdTls)).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_tls(mut self, config: grpc_guard::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// The job's token, carried by every call (joins, waits, heartbeats, reports, leaves and
    /// [`watch_round`](RendezvousClient::watch_round)): the first join of a job sets its token,
    /// and the rendezvous refuses any later call on the job without it (`UNAUTHENTICATED`).
    /// Without one (the default) the job is open: see [the crate's Security
    /// section](crate#security).
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// The job's token, if the client has one.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }
}

/// What a node asks when it joins: the job, its config, and the ports of its tasks.
#[derive(Debug, Clone)]
pub struct Join {
    rdzv_id: String,
    config: JobConfig,
    ports: Vec<u16>,
    host: String,
    name: String,
    node_id: Option<String>,
    /// The node's secret, once it has one (a join again); a first join draws it.
    secret: Option<NodeSecret>,
}

impl Join {
    /// A node of job `rdzv_id` with `config`, whose tasks will serve on `ports` (one per
    /// task, which the agent holds for them).
    pub fn new(rdzv_id: impl Into<String>, config: JobConfig, ports: Vec<u16>) -> Self {
        Self {
            rdzv_id: rdzv_id.into(),
            config,
            ports,
            host: String::new(),
            name: String::new(),
            node_id: None,
            secret: None,
        }
    }

    /// The host other tasks reach this node's tasks at. By default, the address the
    /// rendezvous sees this node's calls come from.
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    /// The ports of the node's tasks, one per task.
    pub fn with_ports(mut self, ports: Vec<u16>) -> Self {
        self.ports = ports;
        self
    }

    /// The job's config.
    pub fn config(&self) -> &JobConfig {
        &self.config
    }

    /// The job's rendezvous id.
    pub(crate) fn rdzv_id(&self) -> &str {
        &self.rdzv_id
    }

    /// A name for messages, such as the host name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The node's id in the job (letters, digits, `.`, `_`, `-`). By default one is drawn at
    /// random (from the name, when there is one), so that a retried join is the same node.
    ///
    /// An id is no credential: each join also draws the node a secret, which only the
    /// [`Node`] it returns holds and sends. While a node with this id is in the job, a join
    /// under its id from anything but [`rejoin`](RendezvousClient::rejoin) of that `Node`
    /// is refused (`PERMISSION_DENIED`), until the node leaves or is lost.
    pub fn with_node_id(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = Some(node_id.into());
        self
    }

    /// This join with its node's id and secret drawn (those it has are kept): joined, it is
    /// this node, so that a join cut short can be left ([`RendezvousClient::leave_cut_short`]).
    pub(crate) fn drawn(mut self) -> Self {
        self.identity();
        self
    }

    /// The node's id and secret, drawn when the join has none yet.
    fn identity(&mut self) -> (String, NodeSecret) {
        let node_id = self
            .node_id
            .get_or_insert_with(|| random_node_id(&self.name))
            .clone();
        let secret = self.secret.get_or_insert_with(NodeSecret::generate).clone();
        (node_id, secret)
    }
}

/// A node that joined a job: what later calls name, and which round it waits for. It holds
/// the node's secret, which its calls carry and its `Debug` does not show.
#[derive(Debug, Clone)]
pub struct Node {
    join: Join,
    node_id: String,
    secret: NodeSecret,
    host: String,
    heartbeat_timeout: Duration,
    waits_for: u64,
    note: String,
    last_round: u64,
}

impl Node {
    /// The node's id in the job.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The job's config.
    pub fn config(&self) -> &JobConfig {
        &self.join.config
    }

    /// The host the node's tasks are advertised at.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The ports of the node's tasks.
    pub fn ports(&self) -> &[u16] {
        &self.join.ports
    }

    /// Sets the ports the next [`rejoin`](RendezvousClient::rejoin) gives.
    pub fn set_ports(&mut self, ports: Vec<u16>) {
        self.join.ports = ports;
    }

    /// How long the node may be silent before the rendezvous declares it gone.
    pub fn heartbeat_timeout(&self) -> Duration {
        self.heartbeat_timeout
    }

    /// The round the node waits for, as of its last join.
    pub fn waits_for(&self) -> u64 {
        self.waits_for
    }

    /// Why it waits for that round, as the rendezvous said when it joined.
    pub fn note(&self) -> &str {
        &self.note
    }
}

/// What [`wait_round`](RendezvousClient::wait_round) found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Waited {
    /// A round that holds this node.
    Round(Round),
    /// The job is done; no round will come.
    JobDone(JobDone),
}

/// A connection to a rendezvous; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub struct RendezvousClient {
    addr: String,
    backend: Backend,
    options: ClientOptions,
}

impl RendezvousClient {
    /// A client of the rendezvous at `addr` (`HOST:PORT`). Connects on the first call, and
    /// again whenever the connection is lost. Call it within a tokio runtime: the
    /// connection's task is spawned at once.
    pub fn new(addr: impl Into<String>, options: ClientOptions) -> Result<Self, Error> {
        let addr = addr.into();
        let grpc = GrpcClient::connect(&addr, &options)?;
        Ok(Self {
            addr,
            backend: Backend::Grpc(grpc),
            options,
        })
    }

    /// A client of the rendezvous kept in the etcd cluster of `etcd`: the rendezvous's rules
    /// run in this process, each call a transaction on the job's record in etcd (see
    /// [`EtcdOptions`](crate::EtcdOptions)), each node's liveness a lease this client keeps
    /// alive while the node polls and heartbeats. Connects on the first call; calls are retried while etcd cannot
    /// be reached (or has no leader) for [`ClientOptions::with_retry_for`], then fail with
    /// [`Error::Unreachable`] naming the endpoints. Errors only for TLS material the client
    /// refuses.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use elastic::{ClientOptions, EtcdOptions, EtcdTls, Join, JobConfig, RendezvousClient};
    ///
    /// # async fn agent() -> Result<(), Box<dyn std::error::Error>> {
    /// let etcd: EtcdOptions = "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379".parse()?;
    /// let tls = EtcdTls::new(std::fs::read("ca.pem")?)
    ///     .with_identity(std::fs::read("client.pem")?, std::fs::read("client-key.pem")?);
    /// let etcd = etcd.with_tls(tls).with_timeout(Duration::from_secs(15));
    /// let client = RendezvousClient::etcd(etcd, ClientOptions::default()).await?;
    /// // From here on, as with the built-in rendezvous.
    /// let config = JobConfig::new("2:3".parse()?, 2)?;
    /// let mut node = client.join(&Join::new("job-1", config, vec![2222, 2223])).await?;
    /// let round = client.wait_round(&mut node, Duration::from_secs(600)).await?;
    /// # let _ = round;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Etcd`] for endpoints or TLS material the etcd client cannot use.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it joins nothing and changes nothing.
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    pub async fn etcd(etcd: crate::EtcdOptions, options: ClientOptions) -> Result<Self, Error> {
        let store = crate::etcd::EtcdStore::connect(&etcd, options.rpc_timeout).await?;
        Ok(Self {
            addr: etcd.to_string(),
            backend: Backend::Etcd(Arc::new(crate::rendezvous::Local::new(store))),
            options,
        })
    }

    /// The rendezvous address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Joins the job for its next round. The first node to join creates the job with its
    /// config; a different config is refused ([`Error::Refused`], naming both values).
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] with the rendezvous's status when it refuses the join (another config,
    /// a finished job, an address another node holds, a field out of range); [`Error::Unreachable`]
    /// when it could not be reached for [`ClientOptions::with_retry_for`].
    ///
    /// # Cancel safety
    ///
    /// A join dropped after it was sent may have taken effect: the node then waits in the job
    /// until the rendezvous finds it silent (its heartbeat timeout). Its id is drawn here unless
    /// [`Join::with_node_id`] names one; with an id, joining again is the same node.
    pub async fn join(&self, join: &Join) -> Result<Node, Error> {
        let mut join = join.clone();
        // The secret is drawn with the id, so that a retried join is the same node.
        let (node_id, secret) = join.identity();
        let args = JoinArgs {
            credentials: self.credentials(Some(&secret)),
            rdzv_id: join.rdzv_id.clone(),
            config: join.config.clone(),
            host: join.host.clone(),
            ports: join.ports.clone(),
            node_id: Some(node_id),
            name: join.name.clone(),
            peer: None,
        };
        let joined = self
            .call(
                "Join",
                self.give_up(),
                self.options.rpc_timeout,
                |backend, t| {
                    let args = args.clone();
                    async move { backend.join(args, t).await }
                },
            )
            .await?;
        Ok(Node {
            join,
            node_id: joined.node_id,
            secret: joined.secret.unwrap_or(secret),
            host: joined.host,
            heartbeat_timeout: joined.heartbeat_timeout,
            waits_for: joined.round,
            note: joined.note,
            last_round: 0,
        })
    }

    /// Joins again after the node's round ended (same id, so the node keeps its place in the
    /// order of members), with its current [ports](Node::set_ports).
    ///
    /// # Errors
    ///
    /// As [`join`](Self::join).
    ///
    /// # Cancel safety
    ///
    /// `node` changes only when the join answered: dropped before, `node` is as it was, and a
    /// join that took effect is the same node's (its id), so calling it again is harmless.
    pub async fn rejoin(&self, node: &mut Node) -> Result<(), Error> {
        let last_round = node.last_round;
        let mut join = node.join.clone().with_node_id(node.node_id.clone());
        join.secret = Some(node.secret.clone());
        *node = self.join(&join).await?;
        node.last_round = last_round;
        Ok(())
    }

    /// Waits up to `timeout` for the next round that holds this node (after the last one
    /// this returned), or for the end of the job. Long polls, so the round arrives as soon as
    /// it closes; polling also keeps the node alive.
    ///
    /// Fails with [`Error::WaitTimeout`], saying what the round still waited for, when the
    /// time runs out.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] as said; [`Error::Unreachable`] when the rendezvous could not be
    /// reached for [`ClientOptions::with_retry_for`] (or the rest of `timeout`); [`Error::Refused`]
    /// when it no longer knows the node (`NOT_FOUND`: it left or was silent too long) or the
    /// node is not waiting (`FAILED_PRECONDITION`: join first); [`Error::InvalidResponse`] for a
    /// round that is not of the node's config, does not hold it at its rank, or makes another
    /// cluster than the rendezvous's.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe. It changes `node` (the round it last got) only as it returns a round;
    /// dropped before, `node` is unchanged and the next call asks for the same round.
    pub async fn wait_round(&self, node: &mut Node, timeout: Duration) -> Result<Waited, Error> {
        self.wait_round_reporting(node, timeout, &mut |_| {}).await
    }

    /// [`wait_round`](Self::wait_round), calling `report` with each pending answer: the first
    /// at once, then each time the round's waiting nodes change, or each long poll (up to
    /// 10 s) while nothing does. A rendezvous older than this client answers only each poll.
    ///
    /// # Errors
    ///
    /// As [`wait_round`](Self::wait_round).
    ///
    /// # Cancel safety
    ///
    /// As [`wait_round`](Self::wait_round).
    pub async fn wait_round_reporting(
        &self,
        node: &mut Node,
        timeout: Duration,
        report: &mut (dyn FnMut(&WaitProgress) + Send),
    ) -> Result<Waited, Error> {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut pending = format!("round {}: no answer yet", node.waits_for);
        let mut last_pending = None;
        let mut quick = QuickAnswers::default();
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::WaitTimeout {
                    rdzv_id: node.join.rdzv_id.clone(),
                    waited: now - start,
                    pending,
                });
            }
            let poll = (deadline - now).min(MAX_POLL);
            let wait = Wait {
                credentials: self.credentials(Some(&node.secret)),
                rdzv_id: node.join.rdzv_id.clone(),
                node_id: node.node_id.clone(),
                after_round: node.last_round,
                poll,
                // No round is 0: the first answer comes at once.
                seen: Some(last_pending.unwrap_or((0, 0))),
            };
            let give_up = deadline.min(self.give_up());
            let asked = Instant::now();
            let found = self
                .call(
                    "WaitRound",
                    give_up,
                    poll + self.options.rpc_timeout,
                    |backend, t| {
                        let wait = wait.clone();
                        async move { backend.wait(wait, t).await }
                    },
                )
                .await?;
            match found {
                Found::Round { round, rank } => {
                    let round = Round::new(round, rank, node, &self.addr)?;
                    node.last_round = round.number();
                    return Ok(Waited::Round(round));
                }
                Found::Done(done) => return Ok(Waited::JobDone(done)),
                Found::Pending(p) => {
                    let changed = last_pending != Some((p.round, p.waiting));
                    last_pending = Some((p.round, p.waiting));
                    report(&WaitProgress {
                        round: p.round,
                        waiting: p.waiting,
                        detail: p.detail.clone(),
                        waited: start.elapsed(),
                        timeout,
                    });
                    pending = p.detail;
                    let left = deadline.saturating_duration_since(Instant::now());
                    let pause = quick.pause(poll, asked.elapsed(), changed, left);
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }

    /// Watches job `rdzv_id` as an observer, not a node: one long poll of up to `poll`
    /// (at most 10 s; the rendezvous may cap it lower) for its running round when that is
    /// later than `after` (`None`: any), answering [`Watched::Pending`] when none came in
    /// time, or [`Watched::JobDone`]. It joins nothing and changes nothing: any number of
    /// observers may watch. When `after` is a round of another job under this id (the
    /// rendezvous restarted and its job began again), the running round is the answer.
    ///
    /// Retried while the rendezvous cannot be reached, as every call is; a job the rendezvous
    /// does not have is [`Error::Refused`] with `NOT_FOUND`.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] (`NOT_FOUND` for an unknown job), [`Error::Unreachable`],
    /// [`Error::InvalidResponse`] for a round that makes another cluster than the rendezvous's.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an observer changes nothing.
    pub async fn watch_round(
        &self,
        rdzv_id: &str,
        after: Option<&WatchedRound>,
        poll: Duration,
    ) -> Result<Watched, Error> {
        let poll = poll.min(MAX_POLL);
        let observe = Observe {
            credentials: self.credentials(None),
            rdzv_id: rdzv_id.to_owned(),
            after_round: after.map_or(0, WatchedRound::number),
            poll,
            job: after.map_or(0, WatchedRound::job),
        };
        let found = self
            .call(
                "WatchRounds",
                self.give_up(),
                poll + self.options.rpc_timeout,
                |backend, t| {
                    let observe = observe.clone();
                    async move { backend.observe(observe, t).await }
                },
            )
            .await?;
        Ok(match found {
            Found::Round { round, .. } => Watched::Round(round),
            Found::Pending(p) => Watched::Pending {
                round: p.round,
                waiting: p.waiting,
                detail: p.detail,
            },
            Found::Done(done) => Watched::JobDone(done),
        })
    }

    /// Tells the rendezvous this node is alive, and learns whether `round` still runs (or,
    /// for the node that runs the chief, still runs with asks to restart the chief:
    /// [`RoundStatus::RestartChief`]).
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] when the rendezvous no longer knows the node (`NOT_FOUND`) or it is not
    /// a member of `round` (`FAILED_PRECONDITION`); [`Error::Unreachable`];
    /// [`Error::InvalidResponse`] for an answer that breaks the protocol.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a heartbeat only tells the rendezvous the node is alive.
    pub async fn heartbeat(&self, node: &Node, round: u64) -> Result<RoundStatus, Error> {
        let (give_up, attempt) = (self.give_up(), self.options.rpc_timeout);
        self.heartbeat_until(node, round, Duration::ZERO, (0, 0), give_up, attempt)
            .await
            .0
    }

    /// Heartbeats for `round` in the background until the round ends, the job is done, or
    /// the rendezvous has been unreachable for the heartbeat timeout; [`Heartbeats::ended`]
    /// says which, as soon as the rendezvous knows (each heartbeat is a long poll of a third
    /// of the timeout that answers when the round ends). Dropping it stops the heartbeats.
    pub fn heartbeats(&self, node: &Node, round: &Round) -> Heartbeats {
        self.heartbeats_counted(node, round, crate::AgentMetrics::default())
    }

    /// [`heartbeats`](Self::heartbeats), each beat's round trip and failed attempts counted
    /// into `metrics`.
    pub(crate) fn heartbeats_counted(
        &self,
        node: &Node,
        round: &Round,
        metrics: crate::AgentMetrics,
    ) -> Heartbeats {
        Heartbeats::start(self.clone(), node.clone(), round.number(), metrics)
    }

    /// Reports how local task `local_task` of `round` ended. A failure ends the round (and
    /// is the job's story if it is its first) unless the job's failure domains restart the
    /// task in place ([`report_exit`](Self::report_exit) says so); the success of the job's
    /// first task (chief, else worker 0) ends the job. Returns whether the report counted:
    /// one for a round that already ended changes nothing. The last 8 KiB of `stderr_tail`
    /// are kept.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] when the rendezvous does not know the node or job (`NOT_FOUND`), or the
    /// report names no task of the node (`INVALID_ARGUMENT`); [`Error::Unreachable`].
    ///
    /// # Cancel safety
    ///
    /// A report dropped after it was sent may have counted. Reporting the same end again
    /// changes nothing once the round ended; a failure restarted in place counts again.
    pub async fn report(
        &self,
        node: &Node,
        round: u64,
        local_task: u32,
        status: TaskStatus,
        stderr_tail: &str,
    ) -> Result<bool, Error> {
        let answer = self
            .report_exit(node, round, local_task, status, stderr_tail, false)
            .await?;
        Ok(answer.counted)
    }

    /// [`report`](Self::report), with whether the task made progress before it ended (output
    /// past its start, a touch of its progress file: [`Supervisor::progressed`]), which the
    /// crash-loop rule asks, and the whole answer: what this node restarts in place.
    ///
    /// [`Supervisor::progressed`]: launcher::supervise::Supervisor::progressed
    ///
    /// # Errors
    ///
    /// Those of [`report`](Self::report).
    ///
    /// # Cancel safety
    ///
    /// As [`report`](Self::report)'s.
    pub async fn report_exit(
        &self,
        node: &Node,
        round: u64,
        local_task: u32,
        status: TaskStatus,
        stderr_tail: &str,
        progressed: bool,
    ) -> Result<ReportAnswer, Error> {
        let mut start = stderr_tail.len().saturating_sub(MAX_STDERR_TAIL);
        while !stderr_tail.is_char_boundary(start) {
            start += 1;
        }
        let report = Report {
            credentials: self.credentials(Some(&node.secret)),
            rdzv_id: node.join.rdzv_id.clone(),
            node_id: node.node_id.clone(),
            round,
            local_task,
            status,
            stderr_tail: stderr_tail[start..].to_owned(),
            progressed,
        };
        let reported = self
            .call(
                "Report",
                self.give_up(),
                self.options.rpc_timeout,
                |backend, t| {
                    let report = report.clone();
                    async move { backend.report(report, t).await }
                },
            )
            .await?;
        Ok(ReportAnswer {
            counted: reported.counted,
            note: reported.note,
            in_place: reported.in_place,
            task_restarts: reported.task_restarts,
            chief_restarts: reported.chief_restarts,
        })
    }

    /// Leaves the job; a round this node is in ends. Leaving twice is fine.
    ///
    /// # Errors
    ///
    /// [`Error::Unreachable`]; [`Error::Refused`] for a request the rendezvous cannot take.
    ///
    /// # Cancel safety
    ///
    /// A leave dropped after it was sent may have taken effect; leaving again is harmless.
    pub async fn leave(&self, node: &Node) -> Result<(), Error> {
        let (give_up, attempt) = (self.give_up(), self.options.rpc_timeout);
        self.leave_within(node, give_up, attempt).await
    }

    /// Leaves the job, giving up after `within` (one try, no retries): what a node that is
    /// told to stop does, so that a signal ends it at once even when the rendezvous does not
    /// answer (the rendezvous then finds it silent at its heartbeat timeout).
    ///
    /// # Errors
    ///
    /// As [`leave`](Self::leave), or [`Error::Unreachable`] when no answer came within `within`.
    ///
    /// # Cancel safety
    ///
    /// As [`leave`](Self::leave).
    pub(crate) async fn leave_briefly(&self, node: &Node, within: Duration) -> Result<(), Error> {
        self.leave_within(node, Instant::now(), within).await
    }

    /// Leaves as the node of `join` (its identity [drawn](Join::drawn)), whose join was cut
    /// short: it may have taken effect, its answer on the way, and a node never heard from
    /// again would be lost at its heartbeat timeout, ending a round as a failure. One try,
    /// giving up after `within`; a join that never arrived makes it a refusal, harmless.
    pub(crate) async fn leave_cut_short(&self, join: &Join, within: Duration) -> Result<(), Error> {
        let (Some(node_id), Some(secret)) = (&join.node_id, &join.secret) else {
            return Ok(());
        };
        self.leave_as(&join.rdzv_id, node_id, secret, Instant::now(), within)
            .await
    }

    async fn leave_within(
        &self,
        node: &Node,
        give_up: Instant,
        attempt: Duration,
    ) -> Result<(), Error> {
        let rdzv_id = &node.join.rdzv_id;
        self.leave_as(rdzv_id, &node.node_id, &node.secret, give_up, attempt)
            .await
    }

    async fn leave_as(
        &self,
        rdzv_id: &str,
        node_id: &str,
        secret: &NodeSecret,
        give_up: Instant,
        attempt: Duration,
    ) -> Result<(), Error> {
        let leave = Leave {
            credentials: self.credentials(Some(secret)),
            rdzv_id: rdzv_id.to_owned(),
            node_id: node_id.to_owned(),
            notice: self.standing_notice(),
        };
        self.call("Leave", give_up, attempt, |backend, t| {
            let leave = leave.clone();
            async move { backend.leave(leave, t).await }
        })
        .await
    }

    /// One heartbeat the server may hold for `poll` while the round runs (the node having
    /// seen the asks to restart its chief up to number `seen.0`, and the job's notice changes
    /// up to `seen.1`), retried until `give_up`, each try bounded by `attempt`. Returns the
    /// answer and the attempts that failed.
    pub(crate) async fn heartbeat_until(
        &self,
        node: &Node,
        round: u64,
        poll: Duration,
        (chief_restarts_seen, notices_seen): (u32, u32),
        give_up: Instant,
        attempt: Duration,
    ) -> (Result<RoundStatus, Error>, u32) {
        let beat = Beat {
            credentials: self.credentials(Some(&node.secret)),
            rdzv_id: node.join.rdzv_id.clone(),
            node_id: node.node_id.clone(),
            round,
            poll,
            chief_restarts_seen,
            notice: self.standing_notice(),
            notices_seen,
        };
        let mut attempts = 0u32;
        let answer = self
            .call("Heartbeat", give_up, attempt, |backend, t| {
                attempts += 1;
                let beat = beat.clone();
                async move { backend.heartbeat(beat, t).await }
            })
            .await;
        // Each attempt before the one that answered failed; all of them when none did.
        let failed = attempts - u32::from(answer.is_ok());
        (answer, failed)
    }

    /// This client following `notices`, the cloud's notices for its host: each heartbeat
    /// carries the standing one (operators see it in the job's status), and a leave while
    /// one with a deadline stands leaves ahead of it: its round's end is planned, and the
    /// host stays out of the job's rounds until the deadline.
    pub(crate) fn with_notices(mut self, notices: watch::Receiver<Option<Notice>>) -> Self {
        self.options.notices = Some(notices);
        self
    }

    /// The notice standing now, as the rendezvous takes it.
    fn standing_notice(&self) -> Option<HostNotice> {
        let notices = self.options.notices.as_ref()?;
        let notice = notices.borrow();
        notice
            .as_ref()
            .map(|n| HostNotice::from_notice(n, SystemTime::now()))
    }

    /// What a call carries: the client's token, and the calling node's `secret`.
    fn credentials(&self, secret: Option<&NodeSecret>) -> Credentials {
        Credentials {
            token: self.options.token.clone(),
            secret: secret.cloned(),
        }
    }

    fn give_up(&self) -> Instant {
        Instant::now() + self.options.retry_for
    }

    /// Calls `f`, each attempt bounded by `attempt`, until it answers, retrying while the
    /// rendezvous cannot be reached until `give_up` (the last attempt starts then). An answer
    /// that is an error is returned at once.
    async fn call<T, F, Fut>(
        &self,
        call: &'static str,
        give_up: Instant,
        attempt: Duration,
        mut f: F,
    ) -> Result<T, Error>
    where
        T: Received,
        F: FnMut(Backend, Duration) -> Fut,
        Fut: Future<Output = Result<T, CallFailed>>,
    {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(50);
        // The first try has its whole time (a long poll may outlast the retries); a retry
        // only what is left of them, so an unreachable rendezvous fails by `give_up`.
        let mut this_try = attempt;
        loop {
            let answer = tokio::time::timeout(this_try, f(self.backend.clone(), this_try)).await;
            let (error, retry_after) = match answer {
                // Whatever answered, it is held to the client's bounds before it is used.
                Ok(Ok(answer)) => {
                    return answer
                        .vetted()
                        .map_err(|e| Error::invalid_response(&self.addr, call, e));
                }
                Ok(Err(CallFailed::Call { error, retry_after })) => (error, retry_after),
                Ok(Err(CallFailed::Answer(error))) => return Err(error),
                Err(_) => (
                    CallError::DeadlineExceeded(format!("no answer within {}", duration(this_try))),
                    None,
                ),
            };
            // Unreachable, no answer in time, a connection the server closed (shutting
            // down), or a refusal the server says will pass (its memory for requests or
            // responses taken, for now): worth another try. Anything else is its answer.
            let pushback = retry_after.map(|after| after.min(MAX_PUSHBACK));
            if pushback.is_none() && !error.is_transient() {
                return Err(Error::Refused {
                    addr: self.addr.clone(),
                    call,
                    code: error.code(),
                    message: error.to_string(),
                });
            }
            let now = Instant::now();
            if now >= give_up {
                return Err(Error::Unreachable {
                    addr: self.addr.clone(),
                    call,
                    waited: start.elapsed(),
                    code: error.code(),
                    message: error.to_string(),
                });
            }
            tokio::time::sleep(pushback.unwrap_or(backoff).min(give_up - now)).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
            let left = give_up.saturating_duration_since(Instant::now());
            this_try = attempt.min(left.max(LAST_TRY));
        }
    }
}

/// A node id that no other node draws: the name's letters (if any) and 64 random bits.
fn random_node_id(name: &str) -> String {
    let prefix: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(48)
        .collect();
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::UNIX_EPOCH
            .elapsed()
            .unwrap_or_default()
            .as_nanos(),
    );
    hasher.write_u32(std::process::id());
    let prefix = if prefix.is_empty() { "node" } else { &prefix };
    format!("{prefix}-{:016x}", hasher.finish())
}
