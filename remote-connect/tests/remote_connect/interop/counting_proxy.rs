//! A gRPC proxy in front of one real TensorFlow worker that forwards every call and counts
//! what crosses the wire: Enqueue requests, and the functions registered and operations run
//! in them.

use std::sync::{Arc, Mutex};

use cluster_proto::eager::eager_service_client::EagerServiceClient;
use cluster_proto::eager::eager_service_server::{EagerService, EagerServiceServer};
use cluster_proto::eager::{
    CloseContextRequest, CloseContextResponse, CreateContextRequest, CreateContextResponse,
    EnqueueRequest, EnqueueResponse, KeepAliveRequest, KeepAliveResponse,
    RunComponentFunctionRequest, RunComponentFunctionResponse, UpdateContextRequest,
    UpdateContextResponse, WaitQueueDoneRequest, WaitQueueDoneResponse, queue_item,
};
use cluster_proto::worker_service_client::WorkerServiceClient;
use cluster_proto::worker_service_server::{WorkerService, WorkerServiceServer};
use cluster_proto::{GetStatusRequest, GetStatusResponse, RecvTensorRequest, RecvTensorResponse};
use tonic::transport::Channel;
use tonic::{Request, Response, Status, Streaming};

/// What the proxy forwarded.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Enqueue requests.
    pub(super) enqueues: usize,
    /// The function registered by each `register_function` item, in order.
    pub(super) registrations: Vec<String>,
    /// `operation` items.
    pub(super) operations: usize,
}

#[derive(Clone)]
struct Proxy {
    upstream: Channel,
    seen: Arc<Mutex<Seen>>,
}

/// Starts a proxy to the worker at `upstream`; returns its address and what it saw. It
/// serves until the test's runtime ends.
pub(super) async fn start(upstream: &str) -> (String, Arc<Mutex<Seen>>) {
    let upstream = tonic::transport::Endpoint::from_shared(format!("http://{upstream}"))
        .unwrap()
        .connect_lazy();
    let proxy = Proxy {
        upstream,
        seen: Arc::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let seen = proxy.seen.clone();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(WorkerServiceServer::new(proxy.clone()))
            .add_service(EagerServiceServer::new(proxy))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    (address, seen)
}

impl Proxy {
    fn eager(&self) -> EagerServiceClient<Channel> {
        EagerServiceClient::new(self.upstream.clone())
    }
}

#[tonic::async_trait]
impl WorkerService for Proxy {
    async fn get_status(
        &self,
        request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        WorkerServiceClient::new(self.upstream.clone())
            .get_status(request.into_inner())
            .await
    }

    async fn recv_tensor(
        &self,
        request: Request<RecvTensorRequest>,
    ) -> Result<Response<RecvTensorResponse>, Status> {
        WorkerServiceClient::new(self.upstream.clone())
            .recv_tensor(request.into_inner())
            .await
    }
}

#[tonic::async_trait]
impl EagerService for Proxy {
    async fn create_context(
        &self,
        request: Request<CreateContextRequest>,
    ) -> Result<Response<CreateContextResponse>, Status> {
        self.eager().create_context(request.into_inner()).await
    }
    async fn update_context(
        &self,
        request: Request<UpdateContextRequest>,
    ) -> Result<Response<UpdateContextResponse>, Status> {
        self.eager().update_context(request.into_inner()).await
    }
    async fn enqueue(
        &self,
        request: Request<EnqueueRequest>,
    ) -> Result<Response<EnqueueResponse>, Status> {
        let request = request.into_inner();
        {
            let mut seen = self.seen.lock().unwrap();
            seen.enqueues += 1;
            for item in &request.queue {
                match &item.item {
                    Some(queue_item::Item::RegisterFunction(r)) => seen.registrations.push(
                        r.function_def
                            .as_ref()
                            .and_then(|d| d.signature.as_ref())
                            .map(|s| s.name.clone())
                            .unwrap_or_default(),
                    ),
                    Some(queue_item::Item::Operation(_)) => seen.operations += 1,
                    _ => {}
                }
            }
        }
        self.eager().enqueue(request).await
    }
    type StreamingEnqueueStream =
        tonic::codegen::tokio_stream::Empty<Result<EnqueueResponse, Status>>;
    async fn streaming_enqueue(
        &self,
        _request: Request<Streaming<EnqueueRequest>>,
    ) -> Result<Response<Self::StreamingEnqueueStream>, Status> {
        Err(Status::unimplemented(
            "the proxy forwards unary Enqueue only",
        ))
    }
    async fn wait_queue_done(
        &self,
        request: Request<WaitQueueDoneRequest>,
    ) -> Result<Response<WaitQueueDoneResponse>, Status> {
        self.eager().wait_queue_done(request.into_inner()).await
    }
    async fn run_component_function(
        &self,
        request: Request<RunComponentFunctionRequest>,
    ) -> Result<Response<RunComponentFunctionResponse>, Status> {
        self.eager()
            .run_component_function(request.into_inner())
            .await
    }
    async fn keep_alive(
        &self,
        request: Request<KeepAliveRequest>,
    ) -> Result<Response<KeepAliveResponse>, Status> {
        self.eager().keep_alive(request.into_inner()).await
    }
    async fn close_context(
        &self,
        request: Request<CloseContextRequest>,
    ) -> Result<Response<CloseContextResponse>, Status> {
        self.eager().close_context(request.into_inner()).await
    }
}
