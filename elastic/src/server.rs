//! [`RendezvousServer`]: the rendezvous service, in process, on a port of its own.

mod registry;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use crate::Error;
use crate::outcome::RoundStatus;
use crate::proto;
use crate::proto::rendezvous_server::{Rendezvous, RendezvousServer as RendezvousService};
use crate::wire;
pub(crate) use registry::MAX_STDERR_TAIL;
use registry::{JoinArgs, Refusal, Registry, Settings, Waited};

/// The largest request the server decodes. A join of 256 ports with a 253-byte host, or a
/// report with its 8 KiB of stderr, is a few KiB; anything larger is refused
/// (`OUT_OF_RANGE`) before it is decoded.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// How a [`RendezvousServer`] times rounds and nodes, and what it holds at most.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    last_call: Duration,
    timeout: Duration,
    max_poll: Duration,
    max_jobs: usize,
}

impl Default for ServerOptions {
    /// A 3 s last call, a 15 s heartbeat timeout, long polls of up to 30 s (and a third of the
    /// timeout), 1,024 jobs.
    fn default() -> Self {
        Self {
            last_call: Duration::from_secs(3),
            timeout: Duration::from_secs(15),
            max_poll: Duration::from_secs(30),
            max_jobs: 1024,
        }
    }
}

impl ServerOptions {
    /// How long a round with at least its minimum nodes waits for another node before it
    /// closes (torchrun's `last_call_timeout`).
    pub fn last_call(mut self, last_call: Duration) -> Self {
        self.last_call = last_call;
        self
    }

    /// How long a node may be silent (no heartbeat or other call) before it is declared gone,
    /// which ends its round (`--rdzv-timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest a `WaitRound` (or `WatchRounds`) long poll is held. It is also held at most
    /// a third of the timeout, so that a node polling is never silent long enough to be
    /// declared gone.
    pub fn max_poll(mut self, max_poll: Duration) -> Self {
        self.max_poll = max_poll;
        self
    }

    /// How many jobs (rendezvous ids) the server serves at once; a join that would start one
    /// more is refused with `RESOURCE_EXHAUSTED`.
    pub fn max_jobs(mut self, max_jobs: usize) -> Self {
        self.max_jobs = max_jobs;
        self
    }

    fn poll_cap(&self) -> Duration {
        self.max_poll.min(self.timeout / 3)
    }

    /// The clock's resolution: a tenth of the shorter of last call and timeout, from 5 ms
    /// to 250 ms.
    fn tick(&self) -> Duration {
        (self.last_call.min(self.timeout) / 10)
            .clamp(Duration::from_millis(5), Duration::from_millis(250))
    }
}

/// The rendezvous service, serving on a TCP port until [`shutdown`](Self::shutdown) or drop.
///
/// It serves any number of jobs, each named by its rendezvous id, with its state in memory:
/// a restarted server starts every job anew (agents join again when their calls fail).
#[derive(Debug)]
pub struct RendezvousServer {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    serve: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    ticker: JoinHandle<()>,
}

impl RendezvousServer {
    /// Binds `addr` (port 0 picks a free port, see [`local_addr`](Self::local_addr)) and
    /// serves. Needs a tokio runtime.
    pub async fn start(addr: SocketAddr, options: ServerOptions) -> Result<Self, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let registry = Arc::new(Mutex::new(Registry::new(Settings {
            last_call: options.last_call,
            timeout: options.timeout,
            max_jobs: options.max_jobs,
        })));
        let (shutdown, _) = watch::channel(false);

        let ticker = tokio::spawn({
            let registry = Arc::clone(&registry);
            let mut interval = tokio::time::interval(options.tick());
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            async move {
                loop {
                    interval.tick().await;
                    lock(&registry).tick(Instant::now());
                }
            }
        });

        let service = RendezvousService::new(Service {
            registry,
            poll_cap: options.poll_cap(),
            shutdown: shutdown.subscribe(),
        })
        .max_decoding_message_size(MAX_REQUEST_BYTES);
        let incoming = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(Duration::from_secs(30)));
        let mut stop = shutdown.subscribe();
        let router = Server::builder()
            // Every call answers within its poll cap; this bounds anything else.
            .timeout(options.poll_cap() + Duration::from_secs(10))
            .http2_keepalive_interval(Some(Duration::from_secs(10)))
            .http2_keepalive_timeout(Some(Duration::from_secs(20)))
            .max_concurrent_streams(256)
            .add_service(service);
        let serve = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|stopping| *stopping).await;
        }));
        tracing::info!(%local_addr, "rendezvous serving");
        Ok(Self {
            local_addr,
            shutdown,
            serve: Some(serve),
            ticker,
        })
    }

    /// The address it serves on, with the port it got.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving: long polls in flight answer `UNAVAILABLE` at once, then the connections
    /// close. Waits for that at most 5 s.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(serve) = self.serve.take() {
            let abort = serve.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), serve)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for RendezvousServer {
    /// Stops serving as [`shutdown`](Self::shutdown) does, without waiting: the serving task
    /// ends its connections itself (aborting it would leave established connections served
    /// by their own tasks).
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.ticker.abort();
    }
}

struct Service {
    registry: Arc<Mutex<Registry>>,
    poll_cap: Duration,
    shutdown: watch::Receiver<bool>,
}

/// The registry; a panic while it was held cannot leave it half changed in a way that matters
/// more than stopping the service would, so a poisoned lock is used as is.
fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn refused(refusal: Refusal) -> Status {
    tracing::debug!(%refusal, "request refused");
    match refusal {
        Refusal::InvalidArgument(m) => Status::invalid_argument(m),
        Refusal::FailedPrecondition(m) => Status::failed_precondition(m),
        Refusal::NotFound(m) => Status::not_found(m),
        Refusal::AlreadyExists(m) => Status::already_exists(m),
        Refusal::ResourceExhausted(m) => Status::resource_exhausted(m),
    }
}

/// The answer of `WaitRound` and `WatchRounds`.
fn waited_to_proto(waited: Waited) -> proto::WaitRoundResponse {
    use proto::wait_round_response::Outcome;
    let outcome = match waited {
        Waited::Pending(p) => Outcome::Pending(proto::Pending {
            round: p.round,
            waiting: p.waiting,
            detail: p.detail,
        }),
        Waited::Done(done) => Outcome::Done(wire::done_to_proto(&done)),
        Waited::Round { round, rank } => Outcome::Round(proto::Round {
            number: round.number,
            restart_count: round.restart_count,
            members: round.members.iter().map(wire::member_to_proto).collect(),
            rank,
            cluster_json: round.cluster_json.clone(),
            config: Some(wire::config_to_proto(&round.config)),
            job: round.job,
        }),
    };
    proto::WaitRoundResponse {
        outcome: Some(outcome),
    }
}

/// A request whose message breaks the protocol or carries an invalid value.
fn invalid(error: Error) -> Status {
    Status::invalid_argument(cluster_spec::error_chain::Chain(&error).to_string())
}

impl Service {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        lock(&self.registry)
    }

    /// Answers what `check` finds. While `check` says the caller would rather wait (with the
    /// answer to give when the time is up), holds the call until job `rdzv_id` changes and
    /// checks again, for at most `poll_ms` (capped). A node's check counts as the node being
    /// heard from, and the cap is a third of the heartbeat timeout, so a node that keeps
    /// polling stays alive; an observer's check (`WatchRounds`) touches no node.
    async fn long_poll<T>(
        &self,
        rdzv_id: &str,
        poll_ms: u64,
        mut check: impl FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal>,
    ) -> Result<T, Status> {
        let deadline = Instant::now() + Duration::from_millis(poll_ms).min(self.poll_cap);
        let mut shutdown = self.shutdown.clone();
        loop {
            // The receiver is taken under the same lock as the state it follows, so no change
            // between the two is missed.
            let (answer, wait, changed) = {
                let mut registry = self.registry();
                let (answer, wait) = check(&mut registry, Instant::now()).map_err(refused)?;
                (answer, wait, registry.subscribe(rdzv_id))
            };
            let Some(mut changed) = changed.filter(|_| wait && Instant::now() < deadline) else {
                return Ok(answer);
            };
            tokio::select! {
                _ = changed.changed() => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
                _ = shutdown.wait_for(|stopping| *stopping) => {
                    return Err(Status::unavailable("the rendezvous is shutting down"));
                }
            }
        }
    }
}

#[tonic::async_trait]
impl Rendezvous for Service {
    async fn join(
        &self,
        request: Request<proto::JoinRequest>,
    ) -> Result<Response<proto::JoinResponse>, Status> {
        let peer = request.remote_addr();
        let req = request.into_inner();
        let config = wire::config_from_proto(req.config).map_err(invalid)?;
        let ports = wire::ports_from_proto(&req.ports).map_err(invalid)?;
        let host = if req.host.is_empty() {
            peer.map(|a| a.ip().to_canonical().to_string())
                .ok_or_else(|| {
                    Status::invalid_argument("no host given, and the caller's address is unknown")
                })?
        } else {
            req.host
        };
        let args = JoinArgs {
            rdzv_id: req.rdzv_id,
            config,
            node_id: (!req.node_id.is_empty()).then_some(req.node_id),
            host,
            ports,
            name: req.name,
        };
        let mut registry = self.registry();
        let joined = registry.join(args, Instant::now()).map_err(refused)?;
        Ok(Response::new(proto::JoinResponse {
            node_id: joined.node_id,
            round: joined.round,
            note: joined.note,
            heartbeat_timeout_ms: registry.settings().timeout.as_millis() as u64,
            host: joined.host,
        }))
    }

    async fn wait_round(
        &self,
        request: Request<proto::WaitRoundRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let req = request.into_inner();
        let waited = self
            .long_poll(&req.rdzv_id, req.poll_ms, |registry, now| {
                let waited = registry.wait(&req.rdzv_id, &req.node_id, req.after_round, now)?;
                let pending = matches!(waited, Waited::Pending(_));
                Ok((waited, pending))
            })
            .await?;
        Ok(Response::new(waited_to_proto(waited)))
    }

    async fn watch_rounds(
        &self,
        request: Request<proto::WatchRoundsRequest>,
    ) -> Result<Response<proto::WaitRoundResponse>, Status> {
        let req = request.into_inner();
        let waited = self
            .long_poll(&req.rdzv_id, req.poll_ms, |registry, now| {
                let waited = registry.observe(&req.rdzv_id, req.job, req.after_round, now)?;
                let pending = matches!(waited, Waited::Pending(_));
                Ok((waited, pending))
            })
            .await?;
        Ok(Response::new(waited_to_proto(waited)))
    }

    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatResponse>, Status> {
        use proto::heartbeat_response::State;
        let req = request.into_inner();
        let status = self
            .long_poll(&req.rdzv_id, req.poll_ms, |registry, now| {
                let status = registry.heartbeat(&req.rdzv_id, &req.node_id, req.round, now)?;
                let running = status == RoundStatus::Running;
                Ok((status, running))
            })
            .await?;
        let state = match status {
            RoundStatus::Running => State::Running(true),
            RoundStatus::Ended(end) => State::Ended(wire::end_to_proto(&end)),
            RoundStatus::JobDone(done) => State::Done(wire::done_to_proto(&done)),
        };
        Ok(Response::new(proto::HeartbeatResponse {
            state: Some(state),
        }))
    }

    async fn report(
        &self,
        request: Request<proto::ReportRequest>,
    ) -> Result<Response<proto::ReportResponse>, Status> {
        let req = request.into_inner();
        let status = wire::status_from_proto(req.status).map_err(invalid)?;
        let (counted, note) = self
            .registry()
            .report(
                &req.rdzv_id,
                &req.node_id,
                req.round,
                req.local_task,
                status,
                req.stderr_tail,
                Instant::now(),
            )
            .map_err(refused)?;
        Ok(Response::new(proto::ReportResponse { counted, note }))
    }

    async fn leave(
        &self,
        request: Request<proto::LeaveRequest>,
    ) -> Result<Response<proto::LeaveResponse>, Status> {
        let req = request.into_inner();
        self.registry()
            .leave(&req.rdzv_id, &req.node_id, Instant::now());
        Ok(Response::new(proto::LeaveResponse {}))
    }
}
