//! [`Store`]: where a rendezvous keeps its jobs, and how a call waits for one to change. The
//! service's calls are the same on every store: [`Memory`] holds the registry in this
//! process (the built-in rendezvous), the etcd store loads each job from etcd for a call and
//! writes back what the call changed.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tonic::Status;

use super::registry::{JoinArgs, Joined, Refusal, Registry};
use crate::proto;

/// Where the jobs are. A call's `check` runs on the registry holding its job, and says
/// whether the caller would rather wait for a change (and what to answer when the time is up).
pub(crate) trait Store: Send + Sync + 'static {
    /// Answers what `check` finds. While `check` says the caller would rather wait, holds the
    /// call until job `rdzv_id` changes (or the clock would change it) and checks again,
    /// until `deadline`. `node` is the calling node, heard from now (the memory store's
    /// checks mark it themselves; the etcd store keeps its lease alive). `check` may run more
    /// than once for one answer: it must be a function of the registry it is given.
    fn long_poll<T, F>(
        &self,
        rdzv_id: &str,
        node: Option<&str>,
        deadline: Instant,
        check: F,
    ) -> impl Future<Output = Result<T, Status>> + Send
    where
        T: Send,
        F: FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal> + Send;

    /// The longest a long poll is held: at most a third of the heartbeat timeout, so a node
    /// that keeps polling stays alive.
    fn poll_cap(&self) -> Duration;

    /// Joins a node to its job. A store may take the joins that arrive together in one
    /// change (the etcd store does).
    fn join(
        &self,
        args: JoinArgs,
    ) -> impl Future<Output = Result<proto::JoinResponse, Status>> + Send {
        async move {
            let node = args.node_id.clone();
            self.long_poll(
                &args.rdzv_id,
                node.as_deref(),
                Instant::now(),
                |registry, now| {
                    let joined = registry.join(args.clone(), now)?;
                    Ok((join_response(joined, registry.settings().timeout), false))
                },
            )
            .await
        }
    }

    /// The host a joining node's tasks are reached at when it names none: the address its
    /// call came from (`peer`), or for a store in the agent's own process, the address this
    /// host reaches the store at.
    fn default_host(&self, peer: Option<SocketAddr>) -> Option<String>;
}

/// The built-in store: the registry in this process, changed under a lock, a call waiting on
/// its job's change notification.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    pub(super) registry: Arc<Mutex<Registry>>,
    pub(super) poll_cap: Duration,
    pub(super) shutdown: watch::Receiver<bool>,
}

/// The registry; a panic while it was held cannot leave it half changed in a way that matters
/// more than stopping the service would, so a poisoned lock is used as is.
pub(super) fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Store for Memory {
    async fn long_poll<T, F>(
        &self,
        rdzv_id: &str,
        _node: Option<&str>,
        deadline: Instant,
        mut check: F,
    ) -> Result<T, Status>
    where
        T: Send,
        F: FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal> + Send,
    {
        let mut shutdown = self.shutdown.clone();
        loop {
            // The receiver is taken under the same lock as the state it follows, so no change
            // between the two is missed.
            let (answer, wait, changed) = {
                let mut registry = lock(&self.registry);
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

    fn poll_cap(&self) -> Duration {
        self.poll_cap
    }

    fn default_host(&self, peer: Option<SocketAddr>) -> Option<String> {
        peer.map(|a| a.ip().to_canonical().to_string())
    }
}

/// What a join answers: the node's id and round, and the job's heartbeat `timeout`.
pub(crate) fn join_response(joined: Joined, timeout: Duration) -> proto::JoinResponse {
    proto::JoinResponse {
        node_id: joined.node_id,
        round: joined.round,
        note: joined.note,
        heartbeat_timeout_ms: timeout.as_millis() as u64,
        host: joined.host,
    }
}

/// A refusal as the gRPC status the caller gets.
pub(crate) fn refused(refusal: Refusal) -> Status {
    tracing::debug!(%refusal, "request refused");
    match refusal {
        Refusal::InvalidArgument(m) => Status::invalid_argument(m),
        Refusal::FailedPrecondition(m) => Status::failed_precondition(m),
        Refusal::NotFound(m) => Status::not_found(m),
        Refusal::AlreadyExists(m) => Status::already_exists(m),
        Refusal::ResourceExhausted(m) => Status::resource_exhausted(m),
    }
}
