//! The rendezvous's core, free of any wire: the [`Rendezvous`] calls (join, wait, observe,
//! heartbeat, report, leave, and an operator's status and list) in the crate's own types ([`calls`]) and error
//! ([`CallError`]), what each proves about its caller ([`credentials`]), the rules they run on ([`registry`]: rounds, admission, membership),
//! where the jobs are kept ([`Store`]: [`Memory`] here, etcd's in `crate::etcd`), and
//! [`Local`], the calls run in this process over a store.
//!
//! Around it, the outer layers: `crate::grpc` serves a `Local` over gRPC and is a
//! `Rendezvous` over a gRPC stub; the client calls whichever it was given.

pub(crate) mod call_error;
pub(crate) mod caller;
pub(crate) mod calls;
pub(crate) mod credentials;
mod local;
mod memory;
mod metrics;
pub(crate) mod registry;
mod store;

use std::future::Future;
use std::time::Duration;

pub(crate) use call_error::CallError;
pub(crate) use calls::{
    Beat, Found, JoinArgs, Joined, Leave, ListQuery, Observe, Pending, Report, Reported,
    StatusQuery, Wait,
};
pub(crate) use credentials::{Credentials, NodeSecret, Proof};
pub(crate) use local::Local;
pub(crate) use memory::Memory;
pub(crate) use metrics::Method;
pub use metrics::RendezvousMetrics;
pub(crate) use store::Store;

use crate::job_status::{JobStatus, JobSummary};
use crate::outcome::RoundStatus;

/// How long a node may be silent before it is lost, unless the rendezvous is told otherwise
/// ([`RendezvousServerBuilder::with_timeout`](crate::RendezvousServerBuilder::with_timeout),
/// [`EtcdOptions::with_timeout`](crate::EtcdOptions::with_timeout)): an agent heartbeats
/// three times in it, so a host whose agent is gone (killed, its link down) costs its job
/// about this long before the others go on. Measured beside TensorFlow training on a busy
/// 2-core machine with no false loss (docs/benchmarks.md).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a round with at least `min` nodes waits for more, unless the rendezvous is told
/// otherwise ([`RendezvousServerBuilder::with_last_call`](crate::RendezvousServerBuilder::with_last_call),
/// [`EtcdOptions::with_last_call`](crate::EtcdOptions::with_last_call)): long enough for
/// hosts started together by one script to arrive, short next to a TensorFlow start.
pub const DEFAULT_LAST_CALL: Duration = Duration::from_secs(3);

/// The rendezvous's calls, whoever answers them: [`Local`] over a store in this process, or
/// the gRPC client over a rendezvous elsewhere. `within` is how long the caller waits for
/// the answer (a gRPC client sends it as the call's deadline; a local call is bounded by
/// its own poll and its store's deadlines). Each call may be dropped at any await: a call
/// dropped before its answer may still have taken effect (a join may have admitted the
/// node), as a call whose answer was lost on the wire may.
pub(crate) trait Rendezvous: Send + Sync {
    /// Why a call failed.
    type Error;

    /// Joins a node to its job for its next round.
    fn join(
        &self,
        join: JoinArgs,
        within: Duration,
    ) -> impl Future<Output = Result<Joined, Self::Error>> + Send;

    /// A long poll for the next round that holds a node, or the job's end.
    fn wait(
        &self,
        wait: Wait,
        within: Duration,
    ) -> impl Future<Output = Result<Found, Self::Error>> + Send;

    /// A long poll for a job's running round, as an observer that is no node of it.
    fn observe(
        &self,
        observe: Observe,
        within: Duration,
    ) -> impl Future<Output = Result<Found, Self::Error>> + Send;

    /// A node is alive; a long poll that answers when its round ends.
    fn heartbeat(
        &self,
        beat: Beat,
        within: Duration,
    ) -> impl Future<Output = Result<RoundStatus, Self::Error>> + Send;

    /// How a node's local task ended.
    fn report(
        &self,
        report: Report,
        within: Duration,
    ) -> impl Future<Output = Result<Reported, Self::Error>> + Send;

    /// A node leaves its job.
    fn leave(
        &self,
        leave: Leave,
        within: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// A long poll for a job's status, as an operator that is no node of it.
    fn job_status(
        &self,
        query: StatusQuery,
        within: Duration,
    ) -> impl Future<Output = Result<JobStatus, Self::Error>> + Send;

    /// The jobs the caller's token opens.
    fn list_jobs(
        &self,
        query: ListQuery,
        within: Duration,
    ) -> impl Future<Output = Result<Vec<JobSummary>, Self::Error>> + Send;
}
