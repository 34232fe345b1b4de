//! `/tensorflow.WorkerService/GetStatus`: the task's devices, for discovery. RecvTensor is
//! answered UNIMPLEMENTED (this server runs no ops, so it holds no tensors); the other
//! WorkerService methods are not registered, so the gRPC router answers them UNIMPLEMENTED.

use std::sync::Arc;

use cluster_proto::worker_service_server::WorkerService;
use cluster_proto::{GetStatusRequest, GetStatusResponse, RecvTensorRequest, RecvTensorResponse};
use tonic::{Request, Response, Status};

use super::eager_service::not_served;
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

    async fn recv_tensor(
        &self,
        _request: Request<RecvTensorRequest>,
    ) -> Result<Response<RecvTensorResponse>, Status> {
        Err(not_served("WorkerService.RecvTensor"))
    }
}
