//! `/tensorflow.eager.EagerService/*` routed by method: the two that carry a cluster
//! (`CreateContext`, `UpdateContext`) decoded lean ([`lean_requests`](super::lean_requests))
//! and charged for what decoding them holds; the ones that run operations answered
//! `UNIMPLEMENTED` without reading the request; the rest (`KeepAlive`, `CloseContext`) by the
//! generated server.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use cluster_proto::eager::eager_service_server::EagerServiceServer;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::{NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::contiguous::{Charged, Contiguous, DecodedSize};
use super::eager_service::{Eager, create, not_served, update};
use super::limits::MAX_MESSAGE_SIZE;
use super::state::TaskState;
use grpc_guard::RequestMemory;

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
