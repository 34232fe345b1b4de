//! [`Store`]: where a rendezvous keeps its jobs, and how a call waits for one to change. The
//! calls are the same on every store ([`Local`](super::Local) runs them): [`Memory`](super::Memory)
//! holds the registry in this process (the built-in rendezvous), the etcd store loads each job
//! from etcd for a call and writes back what the call changed. A store speaks the crate's own
//! types: its errors are [`CallError`]s.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::registry::{Refusal, Registry};
use super::{CallError, Credentials, JoinArgs, Joined, Proof};
use crate::job_status::JobSummary;

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
    ) -> impl Future<Output = Result<T, CallError>> + Send
    where
        T: Send,
        F: FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal> + Send;

    /// The longest a long poll is held: at most a third of the heartbeat timeout, so a node
    /// that keeps polling stays alive.
    fn poll_cap(&self) -> Duration;

    /// Joins a node to its job, the node proving itself with `proof` (the hashes of what
    /// the join carried). A store may take the joins that arrive together in one change (the
    /// etcd store does).
    fn join(
        &self,
        args: JoinArgs,
        proof: Proof,
    ) -> impl Future<Output = Result<Joined, CallError>> + Send {
        async move {
            let node = args.node_id.clone();
            self.long_poll(
                &args.rdzv_id,
                node.as_deref(),
                Instant::now(),
                |registry, now| Ok((registry.join(args.clone(), &proof, now)?, false)),
            )
            .await
        }
    }

    /// The jobs `credentials` open, by id, at most [`MAX_LISTED`](crate::MAX_LISTED).
    fn list_jobs(
        &self,
        credentials: &Credentials,
    ) -> impl Future<Output = Result<Vec<JobSummary>, CallError>> + Send;

    /// The host a joining node's tasks are reached at when it names none: the address its
    /// call came from (`peer`), or for a store in the agent's own process, the address this
    /// host reaches the store at.
    fn default_host(&self, peer: Option<SocketAddr>) -> Option<String>;
}
