//! # elastic — the rendezvous of tfcluster's elastic launch
//!
//! Elastic launch runs a TensorFlow job on whichever hosts show up, and keeps it running as
//! hosts fail, leave or join. Each host runs an agent (`tfcluster run --rdzv HOST:PORT
//! --nodes 2:4 --tasks-per-node 2 -- python train.py`); the agents meet at a rendezvous,
//! which groups them into **rounds**. A round is an immutable membership: its number, its
//! members in rank order, and the cluster they make, computed by one deterministic rule
//! (the crate's assignment rule) so every agent derives the same `TF_CONFIG`. Anything that changes the
//! membership ends the round — a task failing, an agent going silent or leaving, a new agent
//! while the round has room — and the survivors join again for the next one. TensorFlow's
//! strategies cannot change their cluster in place, so agents restart their tasks with each
//! round.
//!
//! This crate is that rendezvous, its client, and the agent that drives both:
//!
//! - [`RendezvousServer`]: the service (gRPC, our own `tfcluster.rendezvous` package,
//!   [`proto`]), in process, serving any number of jobs by rendezvous id.
//! - [`RendezvousClient::etcd`] (feature `etcd`): the same rendezvous with no server, its
//!   state kept in an etcd cluster ([`EtcdOptions`]), so the job outlives any one host: see
//!   [the etcd backend](#the-etcd-backend).
//! - [`RendezvousClient`]: an agent's calls — [`join`](RendezvousClient::join),
//!   [`wait_round`](RendezvousClient::wait_round) (or
//!   [`wait_round_reporting`](RendezvousClient::wait_round_reporting), told how the round
//!   forms: [`WaitProgress`]), [`heartbeats`](RendezvousClient::heartbeats) while the round runs, [`report`](RendezvousClient::report) a task's end,
//!   [`leave`](RendezvousClient::leave).
//! - [`Round`]: the round an agent got — its cluster, this node's tasks and their
//!   [`TF_CONFIG`](Round::tf_config), the job's restart count — and
//!   [`RendezvousClusterResolver`], a round as a `ClusterResolver`, so `remote-connect`'s
//!   `connect_to_cluster` can connect to it.
//! - [`RendezvousWatcher`]: a job's rounds seen from outside the job (the `WatchRounds`
//!   long poll, [`RendezvousClient::watch_round`]): it joins nothing and changes nothing. A
//!   `ClusterResolver` over the running round and a `WatchClusterResolver` whose stream
//!   yields each new round's cluster, so `remote-connect`'s `Context::follow` (and
//!   `tfcluster connect --follow --from rendezvous`) follows an elastic job as it changes.
//! - [`RendezvousClient::job_status`] and [`list_jobs`](RendezvousClient::list_jobs): a job
//!   as an operator sees it ([`JobStatus`]: its phase, round and members, every node and
//!   whether it is late, restarts against the limit, the last failure and round end) and the
//!   jobs a token opens ([`JobSummary`]); the status a long poll that answers at the next
//!   change. `tfcluster status` is these calls.
//! - [`Agent`]: one host's side of a job — hold a free port per local task, join, wait for a
//!   round, start each local task with [`task_env`] (its `TF_CONFIG`, `TFCLUSTER_ROUND`,
//!   `TFCLUSTER_RESTART_COUNT`, `TFCLUSTER_NODE_RANK`, `TFCLUSTER_LOCAL_TASK`, and its share
//!   of the host's GPUs as `CUDA_VISIBLE_DEVICES`, [`TaskGpus`](launcher::TaskGpus)), heartbeat,
//!   report each exit with its stderr tail, join again at once when the round ends and stop
//!   the tasks, until the job succeeds ([`AgentOutcome::Succeeded`]: the tasks get the grace),
//!   fails past its restarts ([`AgentOutcome::Failed`], with the first failure) or the caller
//!   stops it ([`AgentOutcome::Stopped`]). A [`WaitWatcher`]
//!   ([`AgentOptions::with_wait_watcher`]) hears how each wait for a round goes.
//!   `tfcluster run --rdzv` is this agent.
//!   The agent starts, supervises and stops its tasks with the [`launcher`] crate
//!   (re-exported): process groups, output, the watchdog, warm interpreters, GPUs, ports;
//!   `tfcluster run --local` uses the same launcher without a rendezvous.
//! - The job's shape, parsed and checked at the edge with errors that name the value:
//!   [`NodeRange`] (`--nodes 2:4`), [`Layout`] (`--layout chief=1,ps=2`), [`JobConfig`].
//!
//! **Who depends on it:** the `tfcluster` CLI (`run --rdzv`, `rendezvous` to serve one, and
//! `connect`/`resolve --from rendezvous` to watch one, `status` to see one),
//! and Rust programs that supervise TensorFlow processes across hosts. It builds on
//! `launcher` (a host's tasks), `cluster-spec` (a round's cluster) and `cluster-resolver` (the `ClusterResolver` trait and
//! `TF_CONFIG`), and pulls tokio and tonic, and with the `etcd` feature etcd-client (etcd's
//! v3 API on the same tonic); it does not depend on `remote-connect`. Its server faces the
//! network through [`grpc_guard`] (re-exported), as remote-connect's TaskServer does: an allow
//! list, a connection cap, handshake and idle timeouts, request and response memory, message
//! timeouts and mTLS ([`RendezvousServerBuilder`]).
//!
//! ## Features
//!
//! - `etcd` (off by default; the `tfcluster` CLI turns it on): the etcd backend,
//!   [`RendezvousClient::etcd`], [`EtcdOptions`], [`EtcdTls`], [`DEFAULT_PREFIX`],
//!   [`ETCD_PORT`]; it pulls etcd-client.
//! - `tls` (off by default; the `tfcluster` CLI turns it on): mTLS for the built-in
//!   rendezvous, `grpc_guard::Access::with_tls` (for [`RendezvousServerBuilder::with_access`])
//!   and `ClientOptions::with_tls` with a `grpc_guard::TlsConfig` (rustls with ring). Without it the built-in rendezvous speaks
//!   plaintext only.
//!
//! It enables `cluster-resolver`'s `watch`, for [`RendezvousWatcher`]. It needs a tokio
//! runtime; the server, the heartbeats and the supervisor's waits run as tokio tasks. The
//! supervisor and the agent are Unix-only (process groups).
//!
//! ## Inside
//!
//! The rendezvous's rules are a core that knows no wire: its calls (join, wait, observe,
//! heartbeat, report, leave) in the crate's own types and error, run in process over a
//! store of the jobs — in memory for [`RendezvousServer`], in etcd for
//! [`RendezvousClient::etcd`]. gRPC is a layer around it: the server serves the core, and
//! the client's gRPC backend is the same calls over the wire. The client calls either
//! alike, with the same deadlines, retries and errors.
//!
//! ## Example
//!
//! A rendezvous and two agents forming a round on loopback:
//!
//! ```
//! use std::time::Duration;
//!
//! use elastic::{
//!     ClientOptions, Join, JobConfig, RendezvousClient, RendezvousServer, RoundStatus,
//!     TaskStatus, Waited,
//! };
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = RendezvousServer::builder()
//!     .with_bind("127.0.0.1:0".parse()?)
//!     .start()
//!     .await?;
//! let client = RendezvousClient::new(server.local_addr().to_string(), ClientOptions::default())?;
//!
//! // Exactly 2 nodes, 2 tasks each, a chief on the first task, up to 3 restarts.
//! let config = JobConfig::new("2".parse()?, 2)?
//!     .with_layout("chief=1".parse()?)?
//!     .with_max_restarts(3);
//! // Each agent holds one port per task; the host defaults to the address the rendezvous
//! // sees the agent at (here 127.0.0.1).
//! let mut a = client.join(&Join::new("job-1", config.clone(), vec![2222, 2223])).await?;
//! let mut b = client.join(&Join::new("job-1", config, vec![2224, 2225])).await?;
//!
//! let wait = Duration::from_secs(10);
//! let (ra, rb) =
//!     tokio::try_join!(client.wait_round(&mut a, wait), client.wait_round(&mut b, wait))?;
//! let (Waited::Round(ra), Waited::Round(rb)) = (ra, rb) else { panic!("the job ended") };
//! assert_eq!((ra.number(), ra.restart_count(), rb.rank()), (1, 0, 1));
//! assert_eq!(ra.cluster_spec(), rb.cluster_spec());
//! assert_eq!(
//!     rb.tf_config(0)?,
//!     r#"{"cluster":{"chief":["127.0.0.1:2222"],"worker":["127.0.0.1:2223","127.0.0.1:2224","127.0.0.1:2225"]},"task":{"type":"worker","index":1},"rpc_layer":"grpc"}"#
//! );
//!
//! // The agents start their tasks with those TF_CONFIGs and heartbeat; the chief's success
//! // ends the job, and every agent learns it.
//! let mut beats = client.heartbeats(&b, &rb);
//! client.report(&a, ra.number(), 0, TaskStatus::Exited(0), "").await?;
//! let RoundStatus::JobDone(done) = beats.ended().await? else { panic!("not done") };
//! assert!(done.succeeded);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Rounds
//!
//! The first node to join a rendezvous id creates the job with its [`JobConfig`]; a node
//! joining with another config is refused (`FAILED_PRECONDITION`, naming both values of each
//! field that differs). A round closes when `max` nodes wait for it, or when at least `min`
//! wait and no new node came for the last call ([`RendezvousServerBuilder::with_last_call`],
//! [`DEFAULT_LAST_CALL`], 3 s), or, after a round, once every member of it still in the job waits again (whom
//! to wait for is known then, and a last call would only add to what a failure costs). A
//! node joining while a round runs waits for the next; if the running round has
//! fewer than `max` nodes, the join ends it, so the next round takes the node in. Members are
//! ordered by when each first joined the job, and keep that order across rounds: rank 0, and
//! with it the chief or worker 0, stays on one host for as long as it stays.
//!
//! A failed task is restarted alone, in place, where TensorFlow survives that: the job's
//! [`RestartPolicy`](failure_policy::RestartPolicy) ([`JobConfig::with_restarts`]; by default
//! TensorFlow's failure domains, [`failure_policy::RestartScope::restart`]) makes a
//! ParameterServerStrategy worker or chief, a parameter server (with the chief: on its node
//! together, else the chief's node is asked, [`RoundStatus::RestartChief`] from
//! [`Heartbeats::next`]), or an evaluator restart in place, at most `max_task_restarts` times
//! a task in a round ([`ReportAnswer::in_place`] tells its agent; [`JobStatus::task_restarts`]
//! shows them). A
//! failure that is the program's, recurring on two nodes or twice on one without progress
//! ([`failure_policy::CrashLoop`]), fails the job at once; an exit with status 42 or 143 (a
//! preemption, saved first) is planned and counts against nothing ([`EndReason::TaskPlanned`]).
//!
//! Any other failure ends its round: a member reports a failed task ([`TaskStatus`]: exit status, signal, or a
//! task that could not start; with the tail of its stderr), or a member is silent for
//! [`RendezvousServerBuilder::with_timeout`] ([`DEFAULT_TIMEOUT`], 3 s), leaves, or joins again, or when a new node
//! joins below `max`. Failures and lost nodes count as restarts; past the config's
//! `max_restarts` the job fails, and every node learns the job's first failure (task, host,
//! status, stderr tail, round). The success of the job's first task (the chief, else
//! worker 0) ends the job for every node. A finished job's rendezvous id refuses new joins
//! until every node has left or gone silent and the timeout has passed again; then the id
//! may start a new job.
//!
//! `WaitRound` and `Heartbeat` are long polls: the server holds them (up to a third of the
//! heartbeat timeout, so a polling node stays alive) and answers the moment the job changes,
//! so every member learns that a round formed or ended within a round trip.
//!
//! An agent should join again as soon as it learns its round ended — before it has stopped
//! its tasks — so that the next round's last call does not close without it, and keep
//! waiting (then heartbeating) while its tasks stop: a stop can take the whole grace
//! (TensorFlow's workers take SIGTERM as a preemption notice and run on), longer than a node
//! may be silent. [`Agent`] does both.
//!
//! ## The etcd backend
//!
//! The built-in rendezvous lives in one process: when its host goes, the job goes (as with
//! torchrun's c10d backend). [`RendezvousClient::etcd`] keeps the rendezvous in an etcd
//! cluster instead, and every agent is equal: `tfcluster run --rdzv
//! etcd://h1:2379,h2:2379,h3:2379`. The rules are the built-in rendezvous's own, run in each
//! agent on the state it reads from etcd:
//!
//! - **A job is one record**, `PREFIX/RDZV_ID/state` ([`proto::StoredJob`]; prefix
//!   [`DEFAULT_PREFIX`] unless [`EtcdOptions::with_prefix`] says otherwise): its config and
//!   timings (set by the node that created it), nodes, rounds, restart count, ended rounds
//!   and first failure, so any surviving agent reports the same job.
//! - **Every call is a transaction.** The agent reads the record and the live-node keys at
//!   one revision, applies the call, and writes the record back only if it changed, on the
//!   condition that its revision is the one it read; otherwise it reads again and reapplies.
//!   Two agents can never close one round two ways, whichever etcd member leads.
//! - **Joins that arrive together are folded into one write.** When a round ends every
//!   agent joins again at once; written one by one, each after losing the race to the
//!   others, 64 joins took a second. A join is instead put as a key of its own
//!   (`PREFIX/RDZV_ID/~join/TOKEN`, [`proto::StoredJoin`]) in the transaction that reads the
//!   job; the joiner then writes the record with every join waiting beside its own applied,
//!   oldest first (up to 42 a transaction, etcd's 128-operation limit), and the answer of
//!   each other join beside it (`~answer/TOKEN`, on that node's lease); an agent that loses
//!   the race reads its answer instead. 64 agents joining at once: 0.17–0.25 s in one process,
//!   from 0.99 s.
//! - **Liveness is a lease.** A node's key `PREFIX/RDZV_ID/alive/NODE_ID` is on a lease of
//!   TTL [`EtcdOptions::with_timeout`] (whole seconds) that its agent renews with each wait and
//!   heartbeat; a dead agent's key expires by itself, and the next call of any agent finds
//!   the node lost and ends its round. A node that leaves gives its lease back at once.
//! - **Waits are watches.** A waiting call watches the record and the live keys from the
//!   revision it read and wakes on a change (a record written, a node's key expiring) or
//!   when its own clock would change the job (a last call running out): no polling of etcd.
//!   A join waiting to be folded wakes no one. (etcd serves a watch that starts behind its
//!   revision from a loop that runs every 100 ms; a count read of what was written in
//!   between answers at once instead.)
//! - **Failures of etcd are retried**: a member down, no leader during an election, an
//!   unreachable cluster are `UNAVAILABLE` and retried for [`ClientOptions::with_retry_for`], then
//!   [`Error::Unreachable`] names the endpoints (`etcd://HOST:PORT,...`). An agent talks to
//!   one member at a time and moves to the next when that one does not answer (each member
//!   gets its share of a call's deadline), so a lost member, the leader included, costs it
//!   one failed try rather than its calls. TLS ([`EtcdTls`]:
//!   the CA, a client certificate) by rustls. A record this version cannot load is
//!   `DATA_LOSS`, naming its key.
//!
//! Times in the record (a node's wait, the last arrival) are wall-clock milliseconds, so
//! hosts' clocks should agree to well under the last call (NTP does); nothing else depends
//! on clocks.
//!
//! ## Watching a job from outside
//!
//! A program that is no node of the job — a `Context` following the cluster, a dashboard —
//! watches its rounds with `WatchRounds`, a long poll like `WaitRound` (capped alike) that
//! answers with the job's running round once it is later than the last one the observer saw,
//! else after the poll with what the next round waits for, or with the job's end. It joins
//! nothing, needs no heartbeat and changes no round, so any number may watch; the round's
//! `rank` in its answer is 0 and means nothing. A round that ended is not answered: its tasks
//! are stopping, and the next round is the news. An id the rendezvous does not know is
//! `NOT_FOUND` (no node has joined it yet, or its nodes all left and it was forgotten). Each
//! round names its job's incarnation, drawn when the job was created, so an observer of a
//! rendezvous that restarted (its job beginning again at round 1) gets the new job's running
//! round rather than waiting for a number past the old one.
//!
//! [`RendezvousWatcher`] wraps it as a resolver and a watch:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use cluster_resolver::WatchClusterResolver;
//! use cluster_resolver::watch::WatchOptions;
//! use elastic::{
//!     ClientOptions, Join, JobConfig, RendezvousClient, RendezvousServer, RendezvousWatcher,
//!     Waited,
//! };
//! use futures_util::StreamExt;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = RendezvousServer::builder()
//!     .with_bind("127.0.0.1:0".parse()?)
//!     .with_last_call(Duration::from_millis(100))
//!     .start()
//!     .await?;
//! let client = RendezvousClient::new(server.local_addr().to_string(), ClientOptions::default())?;
//! let config = JobConfig::new("1:2".parse()?, 1)?;
//! let mut a = client.join(&Join::new("job-1", config.clone(), vec![2222])).await?;
//! let wait = Duration::from_secs(10);
//! let Waited::Round(_) = client.wait_round(&mut a, wait).await? else { panic!("ended") };
//!
//! // An observer: the running round first, then each new round.
//! let watcher = Arc::new(RendezvousWatcher::new(client.clone(), "job-1"));
//! let mut rounds = watcher.watch(WatchOptions::default());
//! assert_eq!(rounds.next().await.unwrap()?.num_tasks("worker")?, 1);
//!
//! // A second node ends round 1 (it had room); round 2 holds both.
//! let mut b = client.join(&Join::new("job-1", config, vec![2223])).await?;
//! client.rejoin(&mut a).await?;
//! let (_, _) = tokio::try_join!(client.wait_round(&mut a, wait), client.wait_round(&mut b, wait))?;
//! assert_eq!(rounds.next().await.unwrap()?.num_tasks("worker")?, 2);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Metrics
//!
//! [`AgentMetrics`] (the agent and its tasks, [`AgentOptions::with_metrics`]),
//! [`TaskMetrics`](launcher::TaskMetrics) (a [`Supervisor`](launcher::supervise::Supervisor)'s
//! tasks, `run --local`) and
//! [`RendezvousMetrics`] (the built-in server, [`RendezvousServerBuilder::with_metrics`]) count into
//! metrics of [`prometheus_client`], registered into a `Registry` the caller passes
//! (`tfcluster`'s `--metrics ADDR` serves it with the `metrics-endpoint` crate). Names as
//! Prometheus exposes them; no label has unbounded values (no address, node id, job id,
//! token or error string):
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `tfcluster_rounds_total` | counter | | rounds this agent took part in |
//! | `tfcluster_restarts_total` | counter | `scope`: `round`, `task`, `task+chief`; `cause`: `task_failed`, `hung`, `planned`, `host_lost`, `joined`, `left` | rounds that ended while this agent was in them (`round`), and this agent's tasks restarted in place, by reason |
//! | `tfcluster_round` | gauge | | the agent's current round number |
//! | `tfcluster_round_members` | gauge | | nodes in that round |
//! | `tfcluster_round_formation_seconds` | histogram | | from joining (or joining again) to the round |
//! | `tfcluster_heartbeat_seconds` | histogram | | heartbeat round trips (the rendezvous holds a beat up to its interval while the round runs) |
//! | `tfcluster_heartbeat_failures_total` | counter | | heartbeat attempts that failed (each retried until the heartbeat timeout) |
//! | `tfcluster_preemption_notices_total` | counter | `cloud`: `gce`, `aws`, `azure`; `kind`: `preemption`, `maintenance`, `termination`, `rebalance` | the cloud's notices for this host ([`AgentOptions::with_notices`]) |
//! | `tfcluster_task_starts_total` | counter | | local tasks started |
//! | `tfcluster_task_exits_total` | counter | `status`: `ok`, `failed`, `signalled`, `hung`, `stopped` | local tasks that exited; `stopped` when the launcher had signalled them |
//! | `tfcluster_tasks_up` | gauge | | local tasks running |
//! | `tfcluster_rendezvous_requests_total` | counter | `method` (the eight RPCs), `code` (gRPC's code name) | calls the server answered |
//! | `tfcluster_rendezvous_jobs` | gauge | | jobs the server holds |
//! | `tfcluster_rendezvous_rounds_formed_total` | counter | | rounds formed, every job |
//! | `tfcluster_rendezvous_hosts_set_aside_total` | counter | | hosts set aside (their tasks kept failing), every job |
//! | `tfcluster_rendezvous_joins_deferred_total` | counter | | joins that found their job's membership budget spent (rounds ended by hosts joining or leaving) and waited instead of ending its round |
//! | `tfcluster_rendezvous_connections` | gauge | | connections open (grpc-guard's count, read at each scrape) |
//! | `tfcluster_rendezvous_refusals_total` | counter | `limit`: `not_allowed`, `max_connections`, `handshake_timeout`, `accept_failed`, `request_memory`, `response_memory` | connections and calls the server refused, by the limit (grpc-guard's `GuardMetrics`, as the TaskServer's) |
//!
//! ## Security
//!
//! Two credentials guard a job, and the rendezvous keeps only their hashes keyed by the job
//! (HMAC-SHA256, the job's id in the key: one token hashes differently in every job), in
//! memory or in the etcd record, compares them in constant time, and never names either in a
//! message or a log. An etcd record must hold each hash or say the job (or node) is open: one
//! whose hash was removed does not load (`DATA_LOSS`), rather than loading as open. On etcd
//! the checks run in the agents, so they rest on etcd's own access control: the guide's
//! Securing page shows a role per job prefix.
//!
//! - **The job's [`Token`]**, shared by the job's hosts
//!   ([`ClientOptions::with_token`]; `tfcluster run --rdzv-token-file PATH` or
//!   `TFCLUSTER_RDZV_TOKEN`, made by `tfcluster rendezvous token`). The job's first join sets
//!   it; every later call on the job — joins, waits, heartbeats, reports, leaves, and
//!   observers' `WatchRounds` — must carry it, else `UNAUTHENTICATED` naming the job and the
//!   call. A call carrying a token to a job created without one is refused too: the id is
//!   not the job its caller means. A server given a token of its own
//!   ([`RendezvousServerBuilder::with_token`], `tfcluster rendezvous serve --token-file`) takes no call
//!   without it, on any job, and each job created there has it.
//! - **Each node's secret**, 128 random bits drawn when the node first joins (by the client;
//!   by the rendezvous for a join that brings none, sent back once in `JoinResponse`), known
//!   only to that agent ([`Node`] keeps it and sends it with each of its calls). `WaitRound`,
//!   `Heartbeat`, `Report`, `Leave` and a later `Join` of the node must carry it, else
//!   `PERMISSION_DENIED` ("node N of job J: wrong or missing node secret"), in every job,
//!   with a token or without.
//!
//! Both travel in each call's gRPC metadata (`authorization: Bearer TOKEN`,
//! `tfcluster-node-secret`), never in a message, so the etcd backend's records of joins hold
//! neither; on etcd, each agent runs the same checks on the hashes the record keeps (a record
//! from before tokens, without them, is an open job of open nodes).
//!
//! **What an attacker who reaches the port can do.** Without a token (an open job): join the
//! job as a new host and get a rank (its tasks then take part in the job), watch its rounds
//! and learn every member's id, host, ports and cluster, take a job id first with a config of
//! its own, and make the job fail or restart through its own node (a node it joined may
//! report its own tasks failing). It cannot act as another node: with a node id learnt from
//! `WatchRounds` but not its secret, it cannot report for it (no false success of rank 0, no
//! failures counted), keep it alive, make it leave, or join again in its place with another
//! address. With a token it lacks, it can do nothing to the job; it can still learn that a
//! job id exists (`UNAUTHENTICATED` rather than `NOT_FOUND`), and, on a server without a
//! token of its own, create jobs under other ids. Tokens and secrets cross the network as
//! the calls do: the built-in rendezvous speaks plaintext gRPC, so on a network an attacker
//! can read, they need TLS to protect them.
//!
//! **Why an open job is the default** (with one loud warning from `tfcluster run --rdzv` and
//! `rendezvous serve`): the hosts of a job are usually started at once by one script with
//! nothing shared but the command line, torchrun's c10d store and etcd (whose auth is off by
//! default) make the same choice, and the node secrets protect every node's own calls even
//! in an open job.
//!
//! ## Limits and failure handling
//!
//! Every call has a deadline on both sides. The server decodes requests up to
//! [`proto::MAX_REQUEST_BYTES`] (64 KiB; larger ones get `OUT_OF_RANGE`), checks every field once
//! (`INVALID_ARGUMENT` naming the value), and serves at most 1,024 jobs
//! ([`RendezvousServerBuilder::with_max_jobs`]) of at most [`MAX_NODES`] nodes, [`MAX_TASKS_PER_NODE`]
//! tasks per node and [`MAX_TASKS`] tasks. A peer sending garbage loses its connection or
//! gets a gRPC status; other peers are not disturbed. The client retries while the
//! rendezvous is unreachable, for [`ClientOptions::with_retry_for`], then fails with
//! [`Error::Unreachable`] naming the address, the call and the cause; a wait that runs out
//! fails with [`Error::WaitTimeout`], saying what the round still waited for. An answer the
//! client cannot use fails with [`Error::InvalidResponse`], its source the cause: a
//! [`WireError`] for a message that breaks the protocol (a field missing, a port or an end
//! reason out of range), the value's own error for a job config that fails its rules.
//!
//! **What the client checks.** It trusts its rendezvous no further than these bounds, on
//! either backend (an etcd record another agent wrote is no more trusted than a gRPC
//! answer): a heartbeat timeout from 100 ms to 1 h (a value past it would panic a deadline
//! or flood heartbeats); node ids (128 bytes) and hosts (253 bytes) without control
//! characters; a round's members within the job's node range and [`MAX_NODES`], one port
//! per task each, the rank among them, the cluster the one its members make; anything else
//! is an [`Error::InvalidResponse`] naming the field and value
//! ([`WireError::OutOfRange`], [`WireError::TooLong`], [`WireError::Control`]). Every text
//! meant for people (a job's detail, a failure's stderr tail, host and name, a round end's
//! detail, a join's note) has terminal escapes and other control characters (but newline
//! and tab) removed and is cut to its last 8 KiB before anyone prints it or writes it to
//! `--error-file`. A long poll (`WaitRound`, a heartbeat, `WatchRounds`) answered in under a
//! tenth of its poll and under 50 ms is followed by a pause, 50 ms doubling to 1 s while the answers stay the
//! same: a rendezvous answering at once gets about a dozen calls in 5 s, not thousands. A
//! signal stops the agent wherever it is, between rounds too, and it leaves the job with a
//! 500 ms deadline.
//!
//! **Limits that hold end to end**, in the registry, so both backends keep them:
//!
//! - a round's tasks must be able to start: every task gets the whole cluster in its
//!   `TF_CONFIG`, one environment variable, which Linux caps at 131,072 bytes
//!   (`MAX_ARG_STRLEN`; past it `execve` fails with "Argument list too long"). A round whose
//!   `TF_CONFIG` would pass it (less a 1 KiB margin), or whose answer would pass the client's
//!   16 MiB message cap, is refused as it forms: the job fails, its detail naming the round,
//!   its task count, the size, the limit and what to do (fewer tasks per host or hosts,
//!   shorter host names). Refused rather than shrunk to the largest round that fits, so a
//!   round is always what its config says. A join whose smallest round could never fit
//!   (`min` nodes, this node's addresses, the others' at their shortest) is refused at once.
//!   [`MAX_TASKS`] is 16,384, what fits at the shortest addresses; at IPv4 addresses about
//!   7,000 tasks fit;
//! - one node's ports are distinct, and hosts are compared by a canonical form for the
//!   "address held" check: IP literals as addresses, names without case or a trailing dot,
//!   `localhost` and its aliases as the loopback address; a host of digits and dots that is
//!   no IPv4 address as written (`127.000.0.9`, `127.1`) is refused, not guessed at
//!   (`inet_aton` would read it as octal or fill it in);
//! - a job holds at most twice its max nodes (members, waiting and idle together), and one
//!   caller's address (an IPv6 caller's /64) may have created at most a sixteenth of the job
//!   limit (64 of 1,024) —
//!   on the built-in server, which knows each join's peer; on etcd no peer is known, so only
//!   the job limit and the node cap hold (`RESOURCE_EXHAUSTED`, naming the job and the cap).
//!
//! An error that wraps a cause says only its own layer (`cannot run ./train.py`, `cannot
//! serve the rendezvous on …`) and reaches the cause through
//! [`source`](std::error::Error::source), so an `anyhow` or `eyre` report shows each cause
//! once; [`Chain`](cluster_spec::__private::error_chain::Chain) shows the whole chain on one line, as a
//! task's failure and the agent's logs do. The rendezvous's answer, from either backend, is a
//! [`Code`] and a message, said in the error's message (`refused Join: FailedPrecondition: …`)
//! and kept in its fields.
//!
//! ## Performance
//!
//! `benches/rendezvous.rs`: from the last of N agents joining to every agent holding the
//! round (min = max = N), in one process on loopback, each agent with a connection of its
//! own, on a shared 2-core machine (criterion medians): about 2.0 ms for 8 agents and 13 ms
//! for 64 (the target was 50 ms for 64). The server answers every
//! parked long poll as the round closes; each agent then rederives and checks the round's
//! cluster.
//!
//! Tokens and node secrets cost a SHA-256 of a few dozen bytes per call on either side: in
//! one run of the bench on a loaded 2-core machine (8 agents, each size also
//! run as `8_token`, a job with a token), last join to round 2.8 ms open and 2.1 ms with a
//! token, all joining at once 4.3 and 4.5 ms; on etcd 23 and 18 ms, 68 and 58 ms: within
//! the run's noise.
//!
//! ## Differences from torchrun
//!
//! torchrun's elastic agent (`torch.distributed.elastic`) is the model; where it differs:
//!
//! - **The restart count is the group's.** Every task of a round sees the same count (the
//!   rounds a failure ended), and `max_restarts` bounds the job, not each agent; in torchrun
//!   each agent counts its own restarts, so agents of one round can disagree.
//! - **A node keeps its rank.** Ranks follow first-join order, so the chief stays on one host
//!   while it lives; torchrun orders a round's participants anew, so rank 0 can move.
//! - **The job ends when its first task succeeds.** TensorFlow's parameter servers never exit
//!   on their own; torchrun waits for every local worker.
//! - **Round ends are pushed**, through long polls, rather than found by polling the
//!   rendezvous every monitor interval (5 s in torchrun).
//! - **GPUs are handed out.** Each local task gets its share of the host's GPUs as
//!   `CUDA_VISIBLE_DEVICES` ([`TaskGpus`](launcher::TaskGpus)); torchrun gives each worker its `LOCAL_RANK` and
//!   leaves picking a device to the script, which TensorFlow, taking every visible GPU,
//!   does not do.
//! - **Restarts are warm.** With [`AgentOptions::with_prewarm`], each local task of a Python
//!   command has an interpreter that imported TensorFlow (or other modules) before its
//!   round and runs the script when handed the round's environment, so a restart skips
//!   Python's start and `import tensorflow`; torchrun starts every worker cold each restart.
//! - **Jobs are TensorFlow's.** A layout places `chief`, `ps` and `evaluator` tasks and the
//!   rest are workers, and each task gets a `TF_CONFIG`, rather than ranks and a master
//!   address.
//! - **The first failure is kept** by the rendezvous and given to every node, with its task,
//!   host, status and stderr tail.
//! - **Task logs are by global task.** With [`AgentOptions::with_task_logs`], each task's
//!   output also goes to `DIR/JOB/round-N/worker-I.out` and `.err`, named by the task's place
//!   in the cluster (`worker-3`), a directory per round; torchrun's `--log-dir` names files by
//!   local rank (pytorch/pytorch#60911) under a fresh directory per run.
//! - **Hung tasks are failures.** With [`AgentOptions::with_watchdog`], a task that shows no
//!   progress (no output, no touch of its `TFCLUSTER_PROGRESS_FILE`, or SIGSTOPped) is asked
//!   for its Python stack (SIGABRT under `PYTHONFAULTHANDLER=1`, which every task gets) and
//!   killed, and its report, [`TaskStatus::Hung`], carries the stack in its stderr tail;
//!   torchrun ignores a worker that is alive but stuck.
//! - **Nodes and jobs have credentials.** Each node's calls carry a secret only it knows,
//!   and a job may have a token ([security](#security)); torchrun's rendezvous trusts any
//!   caller that names a node or a run id.
//! - **Two backends.** The built-in one is in memory: a restarted rendezvous forgets its
//!   jobs (agents' calls then fail and they join again); like TensorFlow's own gRPC it is
//!   plaintext, with job tokens and node secrets ([security](#security)) but no TLS of its
//!   own. The etcd one keeps each job in
//!   etcd, liveness as leases, round changes as revision-compared transactions, with TLS.
//!   torchrun's etcd backend keeps a rendezvous version and participants; ours keeps the
//!   whole job (restart count, first failure), and a node keeps its rank across rounds on
//!   either backend.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
mod assignment;
mod bad_host_policy;
mod client;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
mod grpc;
mod host_notice;
mod job_config;
mod job_status;
mod layout;
mod node_range;
mod outcome;
mod received;
mod rendezvous;
mod resolver;
mod task_env;
mod token;
mod watched_round;
mod watcher;
mod wire;

mod generated {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    #[rustfmt::skip]
    pub(crate) mod protos {
        include!("generated/mod.rs");
    }
}

/// The rendezvous wire messages and tonic stubs, generated from
/// `proto/tfcluster/rendezvous.proto` (package `tfcluster.rendezvous`): the contract for
/// agents written in other languages.
///
/// The file compiles with the reference compiler, protoc, as with protox (which generates
/// this module), so other languages' stubs come from it as it is; Python's, with
/// grpcio-tools: `python -m grpc_tools.protoc -I elastic/proto --python_out=OUT
/// --grpc_python_out=OUT tfcluster/rendezvous.proto`. `cargo xtask python` does that and calls
/// a running rendezvous from the generated client (`python/tests/test_protos.py`). The
/// `JobStatus` call answers a [`JobStatusResponse`](proto::JobStatusResponse): protoc refuses
/// a message named as an rpc.
pub mod proto {
    pub use crate::generated::protos::tfcluster::rendezvous::*;

    /// The `FileDescriptorSet` of `rendezvous.proto`, encoded: what the code was generated
    /// from, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("generated/file_descriptor_set.bin");

    pub use crate::grpc::MAX_REQUEST_BYTES;
}

pub use agent::{
    Agent, AgentError, AgentMetrics, AgentOptions, AgentOutcome, NOTICE_FILE, Notices, WaitWatcher,
};
pub use assignment::{Member, RoundError, TaskAssignment};
pub use bad_host_policy::BadHostPolicy;
pub use client::{
    ClientOptions, Heartbeats, Join, Node, RendezvousClient, Round, WaitProgress, Waited, Watched,
};
/// The clouds' notices the agent follows ([`AgentOptions::with_notices`]).
pub use cloud_notices;
pub use error::Error;
pub use error::code::Code;
pub use error::token::{TokenError, TokenOrigin, TokenProblem};
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
pub use etcd::{DEFAULT_PREFIX, ETCD_PORT, EtcdOptions, EtcdTls};
/// The failure rules the rendezvous and the agent apply: [`RestartPolicy`](failure_policy::RestartPolicy)
/// ([`JobConfig::with_restarts`]), [`TaskEnd`](failure_policy::TaskEnd), crash loops.
pub use failure_policy;
pub use grpc::{RENDEZVOUS_PORT, RendezvousServer, RendezvousServerBuilder, SHUTDOWN_GRACE};
/// The guards the rendezvous server faces the network with: its [`Limits`](grpc_guard::Limits)
/// ([`RendezvousServerBuilder::with_limits`]) and [`Access`](grpc_guard::Access) (allow-list
/// [`Network`](grpc_guard::Network)s and, with `tls`, its `TlsConfig`,
/// [`RendezvousServerBuilder::with_access`]).
pub use grpc_guard;
pub use host_notice::HostNotice;
pub use job_config::{ConfigError, JobConfig, MAX_TASKS, MAX_TASKS_PER_NODE};
pub use job_status::{
    HostAside, JobPhase, JobState, JobStatus, JobSummary, MAX_LISTED, MembershipChurn, NodeState,
    NodeStatus, TaskRestarts,
};
/// The launcher the agent starts its tasks with: its [`Supervisor`](launcher::supervise::Supervisor),
/// [`Prewarm`](launcher::Prewarm) ([`AgentOptions::with_prewarm`]),
/// [`TaskLogs`](launcher::supervise::TaskLogs) ([`AgentOptions::with_task_logs`]) and
/// [`TaskGpus`](launcher::TaskGpus).
pub use launcher;
pub use layout::{Layout, LayoutError, LayoutErrorKind};
pub use node_range::{MAX_NODES, NodeRange, NodesError, NodesErrorKind};
pub use outcome::{EndReason, Failure, JobDone, ReportAnswer, RoundEnd, RoundStatus, TaskStatus};
/// The Prometheus client the metrics register into ([`AgentMetrics::register`]).
pub use prometheus_client;
pub use rendezvous::{DEFAULT_LAST_CALL, DEFAULT_TIMEOUT, RendezvousMetrics};
pub use resolver::RendezvousClusterResolver;
pub use task_env::task_env;
pub use token::{TOKEN_ENV, Token};
pub use watched_round::WatchedRound;
pub use watcher::RendezvousWatcher;
pub use wire::WireError;
