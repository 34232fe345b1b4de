//! [`Backend`]: what a client's calls go to — a rendezvous over gRPC (the built-in one, in
//! some agent or `tfcluster rendezvous`), or the rendezvous service run in this process over
//! an etcd cluster. The calls and their messages are the same either way.

use std::sync::Arc;

use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::proto;
use crate::proto::rendezvous_client::RendezvousClient as Stub;
use crate::proto::rendezvous_server::Rendezvous;
use crate::server::Service;
use crate::server::etcd_store::EtcdStore;

/// Where a [`RendezvousClient`](super::RendezvousClient)'s calls go; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    Grpc(Stub<Channel>),
    Etcd(Arc<Service<EtcdStore>>),
}

/// One method per call, each sent to the stub or run on the service.
macro_rules! calls {
    ($($call:ident: $request:ident => $response:ident;)*) => {
        impl Backend {
            $(
                pub(crate) async fn $call(
                    &mut self,
                    request: Request<proto::$request>,
                ) -> Result<Response<proto::$response>, Status> {
                    match self {
                        Self::Grpc(stub) => stub.$call(request).await,
                        Self::Etcd(service) => Rendezvous::$call(&**service, request).await,
                    }
                }
            )*
        }
    };
}

calls! {
    join: JoinRequest => JoinResponse;
    wait_round: WaitRoundRequest => WaitRoundResponse;
    watch_rounds: WatchRoundsRequest => WaitRoundResponse;
    heartbeat: HeartbeatRequest => HeartbeatResponse;
    report: ReportRequest => ReportResponse;
    leave: LeaveRequest => LeaveResponse;
}
