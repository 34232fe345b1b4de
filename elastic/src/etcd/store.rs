//! The etcd store: each job a record in etcd ([`proto::StoredJob`] at `PREFIX/ID/state`),
//! each node's liveness a key on a lease its agent keeps alive (`PREFIX/ID/alive/NODE`). A
//! call reads both in one transaction, loads the job into a registry (nodes without a key
//! are silent past the timeout), ticks it, runs the call, and writes the record back only if
//! it changed, comparing the record's revision: of two agents changing one state, the second
//! finds the first's change and runs its call again on it. So a round closes once, with one
//! membership, whichever agents race to close it and whatever etcd member leads. A waiting
//! call watches the job's keys from the revision it read (a record written, a node's key
//! expiring) and wakes by its own clock only when the clock would change the job (a last
//! call running out). Joins go through the record's next write ([`joins`](super::joins)), so
//! the joins of a round's end are a few writes, not one each.
//!
//! etcd speaks gRPC: each of its failures is read at once (through
//! [`grpc::status::parts`](crate::grpc::status::parts)) into the store's [`CallError`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use cluster_spec::__private::error_chain::Chain;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, GetOptions, Identity, SortOrder,
    SortTarget, TlsOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use prost::Message;

use super::joins;
use super::options::{EtcdOptions, key_segment, segment_id};
use crate::error::code::Code;
use crate::error::duration;
use crate::job_status::JobSummary;
use crate::rendezvous::registry::{Clock, Refusal, Registry, Settings};
use crate::rendezvous::{CallError, Credentials, JoinArgs, Joined, Proof, Store};
use crate::{Error, proto};

/// The jobs of an etcd cluster, as one agent (one process) sees them.
pub(crate) struct EtcdStore {
    /// A client per member endpoint, in the order given. Calls go to the member at
    /// `current`, and move on to the next one when it does not answer: etcd-client's own
    /// balancing over a list keeps sending a share of the calls to a member that is gone (a
    /// connection that failed looks ready to its balancer, and being idle, is picked first).
    pub(super) clients: Vec<Client>,
    /// The index in `clients` of the member calls go to.
    current: AtomicUsize,
    /// `etcd://HOST:PORT,...`, for messages.
    pub(super) url: String,
    endpoints: Vec<String>,
    prefix: String,
    /// The timings of a job this store creates; a stored job keeps its own.
    settings: Settings,
    /// The lease TTL of this agent's nodes, in whole seconds as etcd counts.
    ttl: i64,
    /// How long one etcd request may take.
    pub(super) rpc_timeout: Duration,
    /// The address this host reaches etcd at: the host of a node that names none.
    host: OnceLock<Option<String>>,
    /// The leases of nodes that joined through this store, by job and node id.
    leases: Mutex<HashMap<NodeKey, Lease>>,
}

impl std::fmt::Debug for EtcdStore {
    /// etcd's client shows nothing of use: the store by its endpoints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A node of a job: its rendezvous id and node id.
pub(super) type NodeKey = (String, String);

/// A node's lease, and when this store last renewed it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lease {
    pub(super) id: i64,
    pub(super) renewed: Instant,
}

/// A job's keys as one transaction read them.
pub(super) struct Snapshot {
    pub(super) record: Option<Vec<u8>>,
    /// The record's revision (0: no record), which a write compares.
    pub(super) mod_revision: i64,
    /// The store's revision at the read: a watch from after it misses nothing.
    revision: i64,
    /// The nodes whose live keys exist.
    pub(super) alive: HashSet<String>,
    /// For a join: the joins waiting to be folded in, by token, oldest first.
    pub(super) joins: Vec<(String, Vec<u8>)>,
    /// For a join: its answer, once another agent folded it in.
    pub(super) answer: Option<Vec<u8>>,
}

impl Snapshot {
    /// Nothing read yet.
    fn empty() -> Self {
        Self {
            record: None,
            mod_revision: 0,
            revision: 0,
            alive: HashSet::new(),
            joins: Vec::new(),
            answer: None,
        }
    }
}

impl EtcdStore {
    /// A client of the etcd cluster of `options` (no connection yet: the first call
    /// connects), each request bounded by `rpc_timeout`.
    pub(crate) async fn connect(
        options: &EtcdOptions,
        rpc_timeout: Duration,
    ) -> Result<Self, Error> {
        let mut connect = ConnectOptions::new()
            // A member cut off from its cluster refuses rather than answers from the past.
            .with_require_leader(true)
            .with_connect_timeout(rpc_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(20));
        if let Some(tls) = options.tls_config() {
            let mut config = TlsOptions::new().ca_certificate(Certificate::from_pem(&tls.ca_pem));
            if let Some((cert, key)) = &tls.identity {
                config = config.identity(Identity::from_pem(cert, key));
            }
            if let Some(domain) = &tls.domain {
                config = config.domain_name(domain.clone());
            }
            connect = connect.with_tls(config);
        }
        let mut clients = Vec::new();
        for url in options.urls() {
            let client = Client::connect([url], Some(connect.clone()))
                .await
                .map_err(|source| Error::Etcd {
                    endpoints: options.to_string(),
                    source,
                })?;
            clients.push(client);
        }
        let timeout = options.node_timeout();
        Ok(Self {
            clients,
            current: AtomicUsize::new(0),
            url: options.to_string(),
            endpoints: options.endpoints().to_vec(),
            prefix: options.key_prefix().to_owned(),
            settings: Settings {
                last_call: options.job_last_call(),
                timeout,
                // One job per record: no limit of the store's own.
                max_jobs: usize::MAX,
                // No rendezvous of its own to guard: each job's token is its first join's.
                token: None,
                metrics: Default::default(),
            },
            ttl: timeout.as_secs_f64().ceil().max(1.0) as i64,
            rpc_timeout,
            host: OnceLock::new(),
            leases: Mutex::new(HashMap::new()),
        })
    }

    pub(super) fn job_prefix(&self, rdzv_id: &str) -> String {
        format!("{}/{}/", self.prefix, key_segment(rdzv_id))
    }

    fn record_key(&self, rdzv_id: &str) -> String {
        format!("{}state", self.job_prefix(rdzv_id))
    }

    pub(super) fn alive_prefix(&self, rdzv_id: &str) -> String {
        format!("{}alive/", self.job_prefix(rdzv_id))
    }

    /// The first key past the ones waiting calls watch (the record and the live keys).
    fn watched_end(&self, rdzv_id: &str) -> String {
        format!("{}\0", self.record_key(rdzv_id))
    }

    pub(super) fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<NodeKey, Lease>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The member calls go to now: its index, and its client.
    pub(super) fn member(&self) -> (usize, Client) {
        let i = self.current.load(Ordering::Relaxed) % self.clients.len();
        (i, self.clients[i].clone())
    }

    /// Moves calls off member `i`, which did not answer, to the next one (unless another
    /// call moved them already).
    fn fail_over(&self, i: usize) {
        let next = (i + 1) % self.clients.len();
        let _ = self
            .current
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// `request` of a member's client within the request deadline, its failure as the error
    /// the client acts on: etcd's own status (UNAVAILABLE while it has no leader, retried)
    /// or UNAVAILABLE for a cluster that cannot be reached, naming the endpoints. A member
    /// that does not answer ([`silent`]) is left for the next, each member tried once within
    /// its share of the deadline, so a member that is gone costs a call no more than that.
    async fn request<T, F, Fut>(&self, what: &str, mut request: F) -> Result<T, CallError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let members = u32::try_from(self.clients.len()).unwrap_or(u32::MAX);
        let share = (self.rpc_timeout / members).max(MIN_SHARE);
        let mut last = None;
        for _ in 0..members {
            let (i, client) = self.member();
            let error = match tokio::time::timeout(share, request(client)).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(e)) => self.error(what, e),
                Err(_) => self.late(what, share),
            };
            if !silent(&error) {
                return Err(error);
            }
            self.fail_over(i);
            last = Some(error);
        }
        Err(last.unwrap_or_else(|| self.late(what, share)))
    }

    /// An etcd client error as the store's: etcd's own status (UNAVAILABLE while it has no
    /// leader), else UNAVAILABLE, naming the endpoints.
    fn error(&self, what: &str, e: etcd_client::Error) -> CallError {
        match e {
            // A connection lost mid-call (a member killed) shows as UNKNOWN or CANCELLED:
            // UNAVAILABLE, so it is retried on another member like any unreachable one.
            etcd_client::Error::GRpcStatus(status) => {
                let (code, message, cause) = crate::grpc::status::parts(&status);
                let code = match code {
                    Code::Unknown | Code::Cancelled => Code::Unavailable,
                    code => code,
                };
                // A failed connection's cause (a refused certificate) is the status's source.
                let text = match cause {
                    Some(cause) => {
                        let cause = Chain(cause).to_string();
                        if cause.starts_with(&message) {
                            cause
                        } else {
                            format!("{message}: {cause}")
                        }
                    }
                    None => message,
                };
                CallError::of_code(code, format!("etcd at {} ({what}): {text}", self.url))
            }
            e => CallError::Unavailable(format!(
                "cannot reach etcd at {} ({what}): {}",
                self.url,
                Chain(&e)
            )),
        }
    }

    /// No answer within `deadline`.
    fn late(&self, what: &str, deadline: Duration) -> CallError {
        CallError::DeadlineExceeded(format!(
            "etcd at {} did not answer ({what}) within {}",
            self.url,
            duration(deadline)
        ))
    }

    /// The job's record and its live nodes, at one revision; for `joining`, the joins waiting
    /// and its answer too, after putting its request when it has one to put.
    pub(super) async fn read(
        &self,
        rdzv_id: &str,
        joining: Option<&joins::Joining>,
    ) -> Result<Snapshot, CallError> {
        let alive_prefix = self.alive_prefix(rdzv_id);
        let joins_prefix = self.joins_prefix(rdzv_id);
        let mut ops = Vec::new();
        if let Some(put) = joining.and_then(|j| j.put_op(self, rdzv_id)) {
            ops.push(put);
        }
        ops.push(TxnOp::get(self.record_key(rdzv_id), None));
        ops.push(TxnOp::get(
            alive_prefix.clone(),
            Some(GetOptions::new().with_prefix().with_keys_only()),
        ));
        if let Some(joining) = joining {
            ops.push(TxnOp::get(
                joins_prefix.clone(),
                Some(
                    GetOptions::new()
                        .with_prefix()
                        .with_sort(SortTarget::Create, SortOrder::Ascend),
                ),
            ));
            ops.push(TxnOp::get(self.answer_key(rdzv_id, &joining.token), None));
        }
        let txn = Txn::new().and_then(ops);
        let answer = self
            .request("read the job", |client| {
                let txn = txn.clone();
                async move { client.kv_client().txn(txn).await }
            })
            .await?;
        let mut snapshot = Snapshot {
            revision: answer.header().map_or(0, |h| h.revision()),
            ..Snapshot::empty()
        };
        let mut gets = answer.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        });
        if let Some(kv) = gets.next().and_then(|g| g.kvs().first().cloned()) {
            snapshot.record = Some(kv.value().to_vec());
            snapshot.mod_revision = kv.mod_revision();
        }
        let after = |kv: &etcd_client::KeyValue, prefix: &str| {
            let rest = kv.key().strip_prefix(prefix.as_bytes()).unwrap_or_default();
            String::from_utf8_lossy(rest).into_owned()
        };
        for kv in gets.next().iter().flat_map(|g| g.kvs()) {
            snapshot.alive.insert(after(kv, &alive_prefix));
        }
        if joining.is_some() {
            for kv in gets.next().iter().flat_map(|g| g.kvs()) {
                snapshot
                    .joins
                    .push((after(kv, &joins_prefix), kv.value().to_vec()));
            }
            snapshot.answer = gets
                .next()
                .and_then(|g| g.kvs().first().map(|kv| kv.value().to_vec()));
        }
        Ok(snapshot)
    }

    /// The job as `snapshot` holds it, loaded into a registry of its own and ticked to `clock`.
    pub(super) fn load(
        &self,
        rdzv_id: &str,
        snapshot: &Snapshot,
        clock: Clock,
    ) -> Result<Registry, CallError> {
        let stored = snapshot
            .record
            .as_deref()
            .map(proto::StoredJob::decode)
            .transpose()
            .map_err(|e| self.unusable(rdzv_id, &e))?;
        let mut registry = Registry::load(
            self.settings.clone(),
            rdzv_id,
            stored,
            &snapshot.alive,
            clock,
        )
        .map_err(|e| self.unusable(rdzv_id, &e))?;
        // Nodes whose keys expired are lost, a last call that ran out closes its round.
        registry.tick(clock.instant());
        Ok(registry)
    }

    fn ttl_duration(&self) -> Duration {
        Duration::from_secs(self.ttl.unsigned_abs())
    }

    /// A new lease of the nodes' TTL.
    pub(super) async fn grant(&self) -> Result<i64, CallError> {
        let ttl = self.ttl;
        let granted = self
            .request("grant a node's lease", |client| async move {
                client.lease_client().grant(ttl, None).await
            })
            .await?;
        Ok(granted.id())
    }

    /// Gives back `lease` now, so its keys go at once; a lease already gone is no matter.
    pub(super) async fn revoke(&self, lease: i64) {
        let _ = self
            .request("revoke a lease", |client| async move {
                client.lease_client().revoke(lease).await
            })
            .await;
    }

    /// Keeps `node`'s lease alive, when this store holds it. An expired lease is forgotten:
    /// the node is lost, and joins again with a new one.
    pub(super) async fn keep_alive(&self, rdzv_id: &str, node: &str) -> Result<(), CallError> {
        let key = (rdzv_id.to_owned(), node.to_owned());
        let Some(Lease { id: lease, renewed }) = self.leases().get(&key).copied() else {
            return Ok(());
        };
        // Renewed a moment ago: a round's end has every node call several times at once
        // (heartbeat, join, wait), and a renewal is a stream opened to etcd. Calls come at
        // least every third of the TTL, so skipping a quarter of it renews well in time.
        let start = Instant::now();
        if start.saturating_duration_since(renewed) < self.ttl_duration() / 4 {
            return Ok(());
        }
        // Opening the keep-alive stream renews the lease once and reads etcd's answer.
        let renewed = self
            .request("keep a node's lease alive", |client| async move {
                match client.lease_client().keep_alive(lease).await {
                    Ok(_) => Ok(true),
                    Err(etcd_client::Error::LeaseKeepAliveError(_)) => Ok(false),
                    Err(e) => Err(e),
                }
            })
            .await?;
        if renewed {
            if let Some(held) = self.leases().get_mut(&key) {
                held.renewed = start;
            }
        } else {
            self.leases().remove(&key);
        }
        Ok(())
    }

    /// Writes the job's record (`None`: deletes it) if it is still at `mod_revision`, with
    /// `ops` beside it. The store's new revision, or `None` when another agent changed the
    /// job first.
    pub(super) async fn write(
        &self,
        rdzv_id: &str,
        mod_revision: i64,
        record: Option<Vec<u8>>,
        mut ops: Vec<TxnOp>,
    ) -> Result<Option<i64>, CallError> {
        let key = self.record_key(rdzv_id);
        ops.insert(
            0,
            match record {
                Some(bytes) => TxnOp::put(key.clone(), bytes, None),
                None => TxnOp::delete(key.clone(), None),
            },
        );
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, mod_revision)])
            .and_then(ops);
        let answer = self
            .request("write the job", |client| {
                let txn = txn.clone();
                async move { client.kv_client().txn(txn).await }
            })
            .await?;
        Ok(answer
            .succeeded()
            .then(|| answer.header().map_or(0, |h| h.revision())))
    }

    /// Gives back the leases of this store's nodes the job no longer has (they left or were
    /// lost), so their keys go now rather than at the TTL.
    pub(super) async fn release(&self, registry: &Registry, rdzv_id: &str) {
        let kept: HashSet<String> = registry.node_ids(rdzv_id).into_iter().collect();
        let gone: Vec<i64> = {
            let mut leases = self.leases();
            let gone: Vec<NodeKey> = leases
                .keys()
                .filter(|(job, node)| job == rdzv_id && !kept.contains(node))
                .cloned()
                .collect();
            gone.iter()
                .filter_map(|key| leases.remove(key).map(|l| l.id))
                .collect()
        };
        for lease in gone {
            self.revoke(lease).await;
        }
    }

    /// Whether a key in `start..end` was written after `revision` (a key deleted is not seen).
    async fn written_since(
        &self,
        start: &str,
        end: &str,
        revision: i64,
    ) -> Result<bool, CallError> {
        let options = GetOptions::new()
            .with_range(end)
            .with_count_only()
            .with_min_mod_revision(revision + 1);
        let answer = self
            .request("read the job", |client| {
                let (start, options) = (start.to_owned(), options.clone());
                async move { client.kv_client().get(start, Some(options)).await }
            })
            .await?;
        Ok(answer.count() > 0)
    }

    /// Returns when a key of the job changes after `revision`, or at `wake`.
    async fn changed(&self, rdzv_id: &str, revision: i64, wake: Instant) -> Result<(), CallError> {
        // The record and the live keys, not the joins beside them: a join wakes no one until
        // it is folded into the record.
        let (start, end) = (self.alive_prefix(rdzv_id), self.watched_end(rdzv_id));
        let mut stream = self
            .request("watch the job", |client| {
                let start = start.clone();
                let options = WatchOptions::new()
                    .with_range(end.clone())
                    .with_start_revision(revision + 1);
                async move { client.watch_client().watch(start, Some(options)).await }
            })
            .await?;
        // The member the watch went to: a watch it cuts moves calls off it.
        let (watching, _) = self.member();
        loop {
            tokio::select! {
                message = stream.message() => match message {
                    // Events, or a watch etcd ended (its start compacted away): read again.
                    Ok(Some(answer)) if answer.canceled() || !answer.events().is_empty() => {
                        return Ok(());
                    }
                    // etcd serves a watch that starts behind its revision from a catch-up
                    // loop, up to 100 ms late: what was written in between is read instead.
                    Ok(Some(answer)) if answer.created()
                        && answer.header().is_some_and(|h| h.revision() > revision) =>
                    {
                        if self.written_since(&start, &end, revision).await? {
                            return Ok(());
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        self.fail_over(watching);
                        return Err(CallError::Unavailable(format!(
                            "etcd at {} ended a watch of job {rdzv_id:?}",
                            self.url
                        )));
                    }
                    Err(e) => {
                        let error = self.error("watch the job", e);
                        if silent(&error) {
                            self.fail_over(watching);
                        }
                        return Err(error);
                    }
                },
                () = tokio::time::sleep_until(wake.into()) => return Ok(()),
            }
        }
    }
}

impl Store for EtcdStore {
    async fn long_poll<T, F>(
        &self,
        rdzv_id: &str,
        node: Option<&str>,
        deadline: Instant,
        mut check: F,
    ) -> Result<T, CallError>
    where
        T: Send,
        F: FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal> + Send,
    {
        if let Some(node) = node {
            self.keep_alive(rdzv_id, node).await?;
        }
        loop {
            let snapshot = self.read(rdzv_id, None).await?;
            let clock = Clock::now();
            let mut registry = self.load(rdzv_id, &snapshot, clock)?;
            let (answer, wait) = check(&mut registry, clock.instant())?;
            let record = registry.store(rdzv_id, clock).map(|r| r.encode_to_vec());
            let mut revision = snapshot.revision;
            if record != snapshot.record {
                match self
                    .write(rdzv_id, snapshot.mod_revision, record, Vec::new())
                    .await?
                {
                    Some(written) => revision = written,
                    // Another agent changed the job first: the call again, on its state.
                    None => continue,
                }
                self.release(&registry, rdzv_id).await;
            }
            if !wait || Instant::now() >= deadline {
                return Ok(answer);
            }
            let wake = registry
                .next_deadline(rdzv_id)
                .map_or(deadline, |at| at.min(deadline));
            self.changed(rdzv_id, revision, wake).await?;
        }
    }

    fn poll_cap(&self) -> Duration {
        (self.settings.timeout / 3).min(Duration::from_secs(30))
    }

    async fn join(&self, args: JoinArgs, proof: Proof) -> Result<Joined, CallError> {
        self.join_folded(args, proof).await
    }

    async fn list_jobs(&self, credentials: &Credentials) -> Result<Vec<JobSummary>, CallError> {
        // One read of every key under the prefix: the records and the live keys beside them.
        let prefix = format!("{}/", self.prefix);
        let options = GetOptions::new().with_prefix().with_limit(LIST_KEYS);
        let answer = self
            .request("list the jobs", |client| {
                let (prefix, options) = (prefix.clone(), options.clone());
                async move { client.kv_client().get(prefix, Some(options)).await }
            })
            .await?;
        let mut jobs: BTreeMap<String, Snapshot> = BTreeMap::new();
        for kv in answer.kvs() {
            let rest = String::from_utf8_lossy(&kv.key()[prefix.len()..]).into_owned();
            let Some((segment, key)) = rest.split_once('/') else {
                continue;
            };
            let snapshot = jobs
                .entry(segment_id(segment))
                .or_insert_with(Snapshot::empty);
            if key == "state" {
                snapshot.record = Some(kv.value().to_vec());
            } else if let Some(node) = key.strip_prefix("alive/") {
                snapshot.alive.insert(node.to_owned());
            }
        }
        let clock = Clock::now();
        let mut summaries = Vec::new();
        for (rdzv_id, snapshot) in jobs.iter().filter(|(_, s)| s.record.is_some()) {
            // One record this version cannot read hides no other job.
            match self.load(rdzv_id, snapshot, clock) {
                Ok(registry) => summaries.extend(registry.summaries(credentials)),
                Err(e) => tracing::warn!("{e}"),
            }
            if summaries.len() >= crate::MAX_LISTED {
                break;
            }
        }
        Ok(summaries)
    }

    fn default_host(&self, _peer: Option<SocketAddr>) -> Option<String> {
        self.host
            .get_or_init(|| self.endpoints.iter().find_map(|e| address_toward(e)))
            .clone()
    }
}

impl EtcdStore {
    /// A record this version cannot load: DATA_LOSS, naming the key; not retried.
    pub(super) fn unusable(
        &self,
        rdzv_id: &str,
        e: &(dyn std::error::Error + 'static),
    ) -> CallError {
        CallError::BrokenState(format!(
            "the record of job {rdzv_id:?} at {} in etcd at {} does not load: {}",
            self.record_key(rdzv_id),
            self.url,
            Chain(e)
        ))
    }
}

/// The most keys one list of the jobs reads: with a few keys per node, thousands of jobs.
const LIST_KEYS: i64 = 100_000;

/// The least time a member gets to answer a call before the next member is tried.
const MIN_SHARE: Duration = Duration::from_millis(500);

/// Whether `error` says a member did not answer the call (unreachable, without a leader, a
/// connection lost, no answer in time) rather than answered it.
fn silent(error: &CallError) -> bool {
    matches!(
        error,
        CallError::Unavailable(_) | CallError::DeadlineExceeded(_)
    )
}

/// This host's address on the route to `endpoint` (`HOST:PORT`): a UDP socket connected
/// there says which, without sending anything.
fn address_toward(endpoint: &str) -> Option<String> {
    let target = endpoint.to_socket_addrs().ok()?.next()?;
    let unspecified: SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = UdpSocket::bind(unspecified).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip().to_canonical().to_string())
}
