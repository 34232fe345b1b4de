//! `/tensorflow.WorkerService/GetStatus`: the task's devices, for discovery. The other
//! WorkerService methods are not registered, so the gRPC router answers them UNIMPLEMENTED.

use std::sync::Arc;

use cluster_proto::worker_service_server::WorkerService;
use cluster_proto::{GetStatusRequest, GetStatusResponse};
use tonic::{Request, Response, Status};

use super::state::TaskState;

pub(crate) struct Worker(pub(crate) Arc<TaskState>);

#[tonic::async_trait]
impl WorkerService for Worker {
    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(GetStatusResponse {
            device_attributes: self.0.own_attributes(),
        }))
    }
}
