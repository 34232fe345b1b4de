//! `CreateContext` decoded lean. TensorFlow's protocol sends every task the whole cluster:
//! the `ServerDef`'s `ClusterDef` and every device the task may see. Decoded into the generic
//! prost messages that is an allocation per address and three per device, and for a 1,024-task
//! cluster it dominated a connect. Here the `ClusterDef` stays bytes until cluster-spec's
//! direct decoder validates it, and of each device only the name is kept. Every other method
//! goes to the generated `EagerServiceServer`.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use cluster_proto::eager::CreateContextResponse;
use cluster_proto::eager::eager_service_server::EagerServiceServer;
use cluster_spec::ClusterSpec;
use tonic::body::Body;
use tonic::codec::CompressionEncoding;
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::{NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::MAX_MESSAGE_SIZE;
use super::contexts::utf8_name;
use super::contiguous::Contiguous;
use super::eager_service::Eager;
use super::identity::Claim;
use super::state::TaskState;

/// `tensorflow.eager.CreateContextRequest`, reading only what a server uses.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LeanCreateContextRequest {
    #[prost(message, optional, tag = "1")]
    server_def: Option<LeanServerDef>,
    #[prost(int64, tag = "3")]
    keep_alive_secs: i64,
    #[prost(message, repeated, tag = "6")]
    cluster_device_attributes: Vec<DeviceNameOnly>,
    #[prost(fixed64, tag = "7")]
    context_id: u64,
    #[prost(fixed64, tag = "8")]
    context_view_id: u64,
    #[prost(bool, tag = "10")]
    clear_existing_contexts: bool,
}

/// `tensorflow.ServerDef` with the `ClusterDef` left encoded.
#[derive(Clone, PartialEq, prost::Message)]
struct LeanServerDef {
    #[prost(bytes = "bytes", tag = "1")]
    cluster: Bytes,
    #[prost(string, tag = "2")]
    job_name: String,
    #[prost(int32, tag = "3")]
    task_index: i32,
    #[prost(int32, tag = "8")]
    replica: i32,
}

/// `tensorflow.DeviceAttributes`, name only, as bytes (no allocation per device).
#[derive(Clone, PartialEq, prost::Message)]
struct DeviceNameOnly {
    #[prost(bytes = "bytes", tag = "1")]
    name: Bytes,
}

impl From<LeanServerDef> for Claim {
    fn from(def: LeanServerDef) -> Self {
        let cluster =
            (!def.cluster.is_empty()).then(|| ClusterSpec::decode_cluster_def(&def.cluster));
        Self {
            cluster,
            job_name: def.job_name,
            task_index: def.task_index,
            replica: def.replica,
        }
    }
}

/// The eager service: CreateContext here, the rest by the generated server.
#[derive(Clone)]
pub(crate) struct EagerRoutes {
    state: Arc<TaskState>,
    generated: EagerServiceServer<Eager>,
    /// The largest request message decoded, in bytes.
    max_decoding: usize,
}

impl EagerRoutes {
    pub(crate) fn new(state: Arc<TaskState>, max_decoding: usize) -> Self {
        let generated = EagerServiceServer::new(Eager(state.clone()))
            .max_decoding_message_size(max_decoding)
            .max_encoding_message_size(MAX_MESSAGE_SIZE)
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Deflate);
        Self {
            state,
            generated,
            max_decoding,
        }
    }
}

impl NamedService for EagerRoutes {
    const NAME: &'static str = "tensorflow.eager.EagerService";
}

impl Service<http::Request<Body>> for EagerRoutes {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() != "/tensorflow.eager.EagerService/CreateContext" {
            return self.generated.call(request);
        }
        let handler = Create(self.state.clone());
        let max_decoding = self.max_decoding;
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(Contiguous::<
                CreateContextResponse,
                LeanCreateContextRequest,
            >::default())
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Deflate)
            .apply_max_message_size_config(Some(max_decoding), Some(MAX_MESSAGE_SIZE));
            Ok(grpc.unary(handler, request).await)
        })
    }
}

struct Create(Arc<TaskState>);

impl UnaryService<LeanCreateContextRequest> for Create {
    type Response = CreateContextResponse;
    type Future = std::future::Ready<Result<Response<CreateContextResponse>, Status>>;

    fn call(&mut self, request: Request<LeanCreateContextRequest>) -> Self::Future {
        std::future::ready(create(&self.0, request.into_inner()))
    }
}

/// `CreateContext` on `state`, whichever way the request arrived.
pub(crate) fn create(
    state: &TaskState,
    r: LeanCreateContextRequest,
) -> Result<Response<CreateContextResponse>, Status> {
    let names = r
        .cluster_device_attributes
        .into_iter()
        .map(|d| utf8_name(d.name))
        .collect::<Result<Vec<_>, _>>()?;
    let device_attributes = state.create_context(
        r.context_id,
        r.context_view_id,
        r.keep_alive_secs,
        r.server_def.map(Claim::from),
        names,
        r.clear_existing_contexts,
    )?;
    Ok(Response::new(CreateContextResponse { device_attributes }))
}
