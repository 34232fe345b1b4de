//! `/tensorflow.eager.EagerService/*`: remote contexts with TensorFlow's semantics
//! (`EagerServiceImpl`), `CreateContext` and `UpdateContext` from their lean requests however
//! they arrived; running operations is not served, and says so at once.

use std::sync::Arc;

use bytes::Bytes;
use cluster_proto::DeviceAttributes;
use cluster_proto::eager::eager_service_server::EagerService;
use cluster_proto::eager::{
    CloseContextRequest, CloseContextResponse, CreateContextRequest, CreateContextResponse,
    EnqueueRequest, EnqueueResponse, KeepAliveRequest, KeepAliveResponse,
    RunComponentFunctionRequest, RunComponentFunctionResponse, UpdateContextRequest,
    UpdateContextResponse, WaitQueueDoneRequest, WaitQueueDoneResponse,
};
use tonic::codegen::tokio_stream;
use tonic::{Request, Response, Status, Streaming};

use super::contexts::utf8_name;
use super::identity::Claim;
use super::lean_requests::{DeviceNameOnly, LeanCreateContextRequest, LeanUpdateContextRequest};
use super::state::TaskState;
use prost::Message;

pub(crate) struct Eager(pub(crate) Arc<TaskState>);

/// A fully decoded request read again as its lean form.
fn relean<L: Message + Default>(request: impl Message) -> Result<L, Status> {
    L::decode(request.encode_to_vec().as_slice())
        .map_err(|e| Status::invalid_argument(e.to_string()))
}

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
    // `eager_routes::EagerRoutes` serves CreateContext and UpdateContext before this service
    // sees them; these paths, kept because the trait requires them, go through the same
    // handlers.
    async fn create_context(
        &self,
        request: Request<CreateContextRequest>,
    ) -> Result<Response<CreateContextResponse>, Status> {
        create(&self.0, relean(request.into_inner())?).map(Response::new)
    }

    async fn update_context(
        &self,
        request: Request<UpdateContextRequest>,
    ) -> Result<Response<UpdateContextResponse>, Status> {
        update(&self.0, relean(request.into_inner())?).map(Response::new)
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

/// The names of a device list, refused unless each is UTF-8.
fn names(devices: Vec<DeviceNameOnly>) -> Result<Vec<Bytes>, Status> {
    devices.into_iter().map(|d| utf8_name(d.name)).collect()
}

/// `CreateContext` on `state`, whichever way the request arrived.
pub(crate) fn create(
    state: &TaskState,
    r: LeanCreateContextRequest,
) -> Result<CreateContextResponse, Status> {
    let device_attributes = state.create_context(
        r.context_id,
        r.context_view_id,
        r.keep_alive_secs,
        r.server_def.map(Claim::from),
        names(r.cluster_device_attributes)?,
        r.clear_existing_contexts,
    )?;
    Ok(CreateContextResponse { device_attributes })
}

/// `UpdateContext` on `state`, whichever way the request arrived. A request without devices is
/// TensorFlow's simplified update: only the view moves.
pub(crate) fn update(
    state: &TaskState,
    r: LeanUpdateContextRequest,
) -> Result<UpdateContextResponse, Status> {
    let install = if r.cluster_device_attributes.is_empty() {
        None
    } else {
        let names = names(r.cluster_device_attributes)?;
        Some(state.install(r.server_def.map(Claim::from), names)?)
    };
    let device_attributes: Vec<DeviceAttributes> = install
        .as_ref()
        .map(|i| i.own.iter().map(|(_, a)| a.clone()).collect())
        .unwrap_or_default();
    state
        .contexts
        .update(r.context_id, r.context_view_id, install)?;
    Ok(UpdateContextResponse { device_attributes })
}
