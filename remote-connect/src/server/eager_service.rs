//! `/tensorflow.eager.EagerService/*`: remote contexts with TensorFlow's semantics
//! (`EagerServiceImpl`); running operations is not served, and says so at once.

use std::sync::Arc;

use cluster_proto::eager::eager_service_server::EagerService;
use cluster_proto::eager::{
    CloseContextRequest, CloseContextResponse, CreateContextRequest, CreateContextResponse,
    EnqueueRequest, EnqueueResponse, KeepAliveRequest, KeepAliveResponse,
    RunComponentFunctionRequest, RunComponentFunctionResponse, UpdateContextRequest,
    UpdateContextResponse, WaitQueueDoneRequest, WaitQueueDoneResponse,
};
use tonic::codegen::tokio_stream;
use tonic::{Request, Response, Status, Streaming};

use super::create_context::{LeanCreateContextRequest as Lean, create};
use super::identity::Claim;
use super::state::TaskState;
use prost::Message;

pub(crate) struct Eager(pub(crate) Arc<TaskState>);

/// The answer to every operation-running method (`Service.Method`): a TensorFlow client
/// raises `UnimplementedError` on it instead of waiting.
pub(crate) fn not_served(method: &str) -> Status {
    Status::unimplemented(format!(
        "{method} is not served by this tfcluster TaskServer: its devices can be \
         discovered and given contexts, but it runs no operations"
    ))
}

#[tonic::async_trait]
impl EagerService for Eager {
    async fn create_context(
        &self,
        request: Request<CreateContextRequest>,
    ) -> Result<Response<CreateContextResponse>, Status> {
        // `create_context::EagerRoutes` serves CreateContext before this service sees it; this
        // path, kept because the trait requires it, goes through the same handler.
        let lean = Lean::decode(request.into_inner().encode_to_vec().as_slice())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        create(&self.0, lean)
    }

    async fn update_context(
        &self,
        request: Request<UpdateContextRequest>,
    ) -> Result<Response<UpdateContextResponse>, Status> {
        let request = request.into_inner();
        // A request without devices is TensorFlow's simplified update: only the view moves.
        let install = if request.cluster_device_attributes.is_empty() {
            None
        } else {
            let names = request
                .cluster_device_attributes
                .into_iter()
                .map(|d| bytes::Bytes::from(d.name))
                .collect();
            Some(self.0.install(request.server_def.map(Claim::from), names)?)
        };
        let device_attributes = install
            .as_ref()
            .map(|i| i.own.iter().map(|(_, a)| a.clone()).collect())
            .unwrap_or_default();
        self.0
            .contexts
            .update(request.context_id, request.context_view_id, install)?;
        Ok(Response::new(UpdateContextResponse { device_attributes }))
    }

    async fn enqueue(
        &self,
        _request: Request<EnqueueRequest>,
    ) -> Result<Response<EnqueueResponse>, Status> {
        Err(not_served("EagerService.Enqueue"))
    }

    type StreamingEnqueueStream = tokio_stream::Empty<Result<EnqueueResponse, Status>>;

    async fn streaming_enqueue(
        &self,
        _request: Request<Streaming<EnqueueRequest>>,
    ) -> Result<Response<Self::StreamingEnqueueStream>, Status> {
        Err(not_served("EagerService.StreamingEnqueue"))
    }

    async fn wait_queue_done(
        &self,
        _request: Request<WaitQueueDoneRequest>,
    ) -> Result<Response<WaitQueueDoneResponse>, Status> {
        Err(not_served("EagerService.WaitQueueDone"))
    }

    async fn run_component_function(
        &self,
        _request: Request<RunComponentFunctionRequest>,
    ) -> Result<Response<RunComponentFunctionResponse>, Status> {
        Err(not_served("EagerService.RunComponentFunction"))
    }

    async fn keep_alive(
        &self,
        request: Request<KeepAliveRequest>,
    ) -> Result<Response<KeepAliveResponse>, Status> {
        let context_view_id = self.0.contexts.touch(request.get_ref().context_id)?;
        Ok(Response::new(KeepAliveResponse { context_view_id }))
    }

    async fn close_context(
        &self,
        request: Request<CloseContextRequest>,
    ) -> Result<Response<CloseContextResponse>, Status> {
        let request = request.into_inner();
        self.0
            .contexts
            .close(request.context_id, request.context_view_id);
        Ok(Response::new(CloseContextResponse {}))
    }
}
