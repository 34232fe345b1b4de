//! [`Backend`]: what a client's calls go to — a rendezvous over gRPC (the built-in one, in
//! some agent or `tfcluster rendezvous`), or, with the `etcd` feature, the rendezvous run in
//! this process over an etcd cluster. Either is a [`Rendezvous`]; the client sees its
//! failures alike, as the crate's own [`CallError`](crate::rendezvous::CallError) (the gRPC
//! client's converted from the status it received, at its edge).

#[cfg(feature = "etcd")]
use std::sync::Arc;
use std::time::Duration;

use super::call_failed::CallFailed;
use crate::grpc::client::GrpcClient;
use crate::job_status::{JobStatus, JobSummary};
use crate::outcome::RoundStatus;
#[cfg(feature = "etcd")]
use crate::rendezvous::Local;
use crate::rendezvous::{
    Beat, Found, JoinArgs, Joined, Leave, ListQuery, Observe, Rendezvous, Report, Reported,
    StatusQuery, Wait,
};

/// Where a [`RendezvousClient`](super::RendezvousClient)'s calls go; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    Grpc(GrpcClient),
    #[cfg(feature = "etcd")]
    Etcd(Arc<Local<crate::etcd::EtcdStore>>),
}

/// Each call sent to the gRPC client or run in process.
macro_rules! calls {
    ($($call:ident: $args:ty => $answer:ty;)*) => {
        impl Rendezvous for Backend {
            type Error = CallFailed;
            $(
                async fn $call(&self, args: $args, within: Duration) -> Result<$answer, CallFailed> {
                    match self {
                        Self::Grpc(grpc) => grpc.$call(args, within).await,
                        #[cfg(feature = "etcd")]
                        Self::Etcd(local) => local.$call(args, within).await.map_err(CallFailed::from),
                    }
                }
            )*
        }
    };
}

calls! {
    join: JoinArgs => Joined;
    wait: Wait => Found;
    observe: Observe => Found;
    heartbeat: Beat => RoundStatus;
    report: Report => Reported;
    leave: Leave => ();
    job_status: StatusQuery => JobStatus;
    list_jobs: ListQuery => Vec<JobSummary>;
}
