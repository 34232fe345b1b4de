//! `/tensorflow.eager.EagerService/*` routed by method: the two that carry a cluster
//! (`CreateContext`, `UpdateContext`) decoded lean and charged for what decoding them holds;
//! the ones that run operations answered `UNIMPLEMENTED` without reading the request; the rest
//! (`KeepAlive`, `CloseContext`) by the generated server.
//!
//! TensorFlow's protocol sends every task the whole cluster: the `ServerDef`'s `ClusterDef`
//! and every device the task may see. Decoded into the generic prost messages that is an
//! allocation per address and three per device, and for a 1,024-task cluster it dominated a
//! connect. Here the `ClusterDef` stays bytes until cluster-spec's direct decoder validates
//! it, and of each device only the name is kept.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use cluster_proto::DeviceAttributes;
use cluster_proto::eager::eager_service_server::EagerServiceServer;
use cluster_proto::eager::{CreateContextResponse, UpdateContextResponse};
use cluster_spec::{ClusterSpec, DECODE_MEMORY_FACTOR};
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::{NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::MAX_MESSAGE_SIZE;
use super::contexts::utf8_name;
use super::contiguous::{Charged, Contiguous, DecodedSize, count_fields};
use super::eager_service::{Eager, not_served};
use super::identity::Claim;
use super::request_memory::RequestMemory;
use super::state::TaskState;

/// What decoding one device record of a device list holds on a server until its context is
/// installed, beyond the record's bytes: the record, the name's place in the list handed to
/// the context, and the set that removes repeats (each allocated with room to grow).
const DECODED_PER_DEVICE: usize = 256;

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

/// `tensorflow.eager.UpdateContextRequest`, reading only what a server uses.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LeanUpdateContextRequest {
    #[prost(message, optional, tag = "1")]
    server_def: Option<LeanServerDef>,
    #[prost(message, repeated, tag = "2")]
    cluster_device_attributes: Vec<DeviceNameOnly>,
    #[prost(fixed64, tag = "3")]
    context_id: u64,
    #[prost(fixed64, tag = "4")]
    context_view_id: u64,
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

/// What a request with a `ServerDef` (field `server_def`) and a device list (field `devices`)
/// holds once decoded: a record per device, and cluster-spec's decode of the `ClusterDef`.
fn cluster_request_size(bytes: &[u8], server_def: u32, devices: u32, at_most: usize) -> usize {
    let [(_, def_bytes), (count, _)] = count_fields(bytes, [server_def, devices], |c| {
        c[1].0.saturating_mul(DECODED_PER_DEVICE) > at_most
    });
    count
        .saturating_mul(DECODED_PER_DEVICE)
        .saturating_add(def_bytes.saturating_mul(DECODE_MEMORY_FACTOR))
}

impl DecodedSize for LeanCreateContextRequest {
    fn decoded_size(bytes: &[u8], at_most: usize) -> usize {
        cluster_request_size(bytes, 1, 6, at_most)
    }
}

impl DecodedSize for LeanUpdateContextRequest {
    fn decoded_size(bytes: &[u8], at_most: usize) -> usize {
        cluster_request_size(bytes, 1, 2, at_most)
    }
}

/// The eager service's methods, each served as the module docs say.
#[derive(Clone)]
pub(crate) struct EagerRoutes {
    state: Arc<TaskState>,
    memory: RequestMemory,
    generated: EagerServiceServer<Eager>,
}

impl EagerRoutes {
    pub(crate) fn new(state: Arc<TaskState>, memory: RequestMemory) -> Self {
        let generated = EagerServiceServer::new(Eager(state.clone()))
            .max_decoding_message_size(MAX_MESSAGE_SIZE)
            .max_encoding_message_size(MAX_MESSAGE_SIZE);
        Self {
            state,
            memory,
            generated,
        }
    }

    /// `handle` serving one request decoded lean as `M`.
    fn lean<M, R>(
        &self,
        request: http::Request<Body>,
        handle: fn(&TaskState, M) -> Result<R, Status>,
    ) -> BoxFuture<http::Response<Body>, Infallible>
    where
        M: prost::Message + DecodedSize + Default + Send + 'static,
        R: prost::Message + Send + 'static,
    {
        let unary = Unary {
            state: self.state.clone(),
            handle,
        };
        let codec = Contiguous::<R, M>::new(self.memory.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(codec)
                .apply_max_message_size_config(Some(MAX_MESSAGE_SIZE), Some(MAX_MESSAGE_SIZE));
            Ok(grpc.unary(unary, request).await)
        })
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
        let method = request
            .uri()
            .path()
            .strip_prefix("/tensorflow.eager.EagerService/")
            .unwrap_or_default();
        match method {
            "CreateContext" => self.lean(request, create),
            "UpdateContext" => self.lean(request, update),
            // Their requests can be large and are never used: not read at all.
            "Enqueue" | "StreamingEnqueue" | "WaitQueueDone" | "RunComponentFunction" => {
                let status = not_served(&format!("EagerService.{method}"));
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
            _ => self.generated.call(request),
        }
    }
}

/// A unary method served by `handle` from its lean request; the request's charge is held
/// until `handle` is done with it.
struct Unary<M, R> {
    state: Arc<TaskState>,
    handle: fn(&TaskState, M) -> Result<R, Status>,
}

impl<M: Send + 'static, R: Send + 'static> UnaryService<Charged<M>> for Unary<M, R> {
    type Response = R;
    type Future = std::future::Ready<Result<Response<R>, Status>>;

    fn call(&mut self, request: Request<Charged<M>>) -> Self::Future {
        let Charged { message, charge } = request.into_inner();
        let answer = (self.handle)(&self.state, message).map(Response::new);
        drop(charge);
        std::future::ready(answer)
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

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_device_list_costs_per_device_and_a_cluster_def_per_byte() {
        let empty_devices = LeanCreateContextRequest {
            cluster_device_attributes: vec![DeviceNameOnly::default(); 1000],
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(empty_devices.len(), 2000, "2 bytes on the wire each");
        assert_eq!(
            LeanCreateContextRequest::decoded_size(&empty_devices, usize::MAX),
            1000 * DECODED_PER_DEVICE
        );
        // Counting stops once the cost is past what could be given.
        assert!(
            LeanCreateContextRequest::decoded_size(&empty_devices, 10 * DECODED_PER_DEVICE)
                <= 11 * DECODED_PER_DEVICE
        );
        let update = LeanUpdateContextRequest {
            server_def: Some(LeanServerDef {
                cluster: Bytes::from(vec![0; 100]),
                ..Default::default()
            }),
            cluster_device_attributes: vec![DeviceNameOnly::default(); 3],
            context_id: 1,
            context_view_id: 1,
        }
        .encode_to_vec();
        let server_def_len = 2 + 100;
        assert_eq!(
            LeanUpdateContextRequest::decoded_size(&update, usize::MAX),
            3 * DECODED_PER_DEVICE + server_def_len * DECODE_MEMORY_FACTOR
        );
    }
}
