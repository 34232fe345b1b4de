//! Shared test support: in-process TaskServers on loopback, raw gRPC clients, free ports.

#![allow(dead_code)]

use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cluster_proto::eager::eager_service_client::EagerServiceClient;
use cluster_proto::worker_service_client::WorkerServiceClient;
use cluster_spec::ClusterSpec;
use futures_util::FutureExt;
use remote_connect::{
    ConnectOptions, Context, Error, LocalDevice, RunningServer, Stage, TaskServer,
};
use tokio::sync::watch;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint};

/// A one-task cluster of `job`, for a server that binds where it is told.
pub(crate) fn placeholder(job: &str) -> ClusterSpec {
    ClusterSpec::builder()
        .job(job, ["localhost:0"])
        .build()
        .unwrap()
}

/// Short deadlines, for connects expected to fail.
pub(crate) fn fast() -> ConnectOptions {
    ConnectOptions::default()
        .with_rpc_timeout(Duration::from_millis(500))
        .with_timeout(Duration::from_secs(2))
}

/// Connects with `options` to `spec`, expecting discovery to fail within `within`; returns
/// each failure's text (task, address, cause).
pub(crate) async fn discovery_failures(
    spec: ClusterSpec,
    options: ConnectOptions,
    within: Duration,
) -> Vec<String> {
    let start = Instant::now();
    let err = Context::new()
        .connect_to_cluster(spec, options)
        .await
        .unwrap_err();
    assert!(start.elapsed() < within, "took {:?}", start.elapsed());
    let Error::Tasks {
        stage: Stage::Discovery,
        failures,
        ..
    } = err
    else {
        panic!("not a discovery failure: {err:?}");
    };
    failures.iter().map(|f| f.to_string()).collect()
}

/// A server for `job`, task 0 of a one-task placeholder cluster, on a free loopback port.
pub(crate) async fn server(job: &str) -> RunningServer {
    TaskServer::builder(placeholder(job), job, 0)
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// Servers for `jobs` (`[("ps", 1), ("worker", 2)]`) and the spec naming them.
pub(crate) async fn servers(jobs: &[(&str, usize)]) -> (ClusterSpec, Vec<RunningServer>) {
    let mut builder = ClusterSpec::builder();
    let mut all = Vec::new();
    for &(job, n) in jobs {
        let mut addresses = Vec::new();
        for _ in 0..n {
            let s = server(job).await;
            addresses.push(s.local_addr().to_string());
            all.push(s);
        }
        builder = builder.job(job, addresses);
    }
    (builder.build().unwrap(), all)
}

/// A CPU-only server for `job`, task 0, listening on exactly `addr` (to restart a task on the
/// port it had).
pub(crate) async fn server_at(job: &str, addr: SocketAddr) -> RunningServer {
    TaskServer::builder(placeholder(job), job, 0)
        .with_devices(vec![LocalDevice::cpu()])
        .with_bind(addr)
        .start()
        .await
        .unwrap()
}

/// Shuts every server down.
pub(crate) async fn shutdown_all(servers: Vec<RunningServer>) {
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

/// A loopback address nothing listens on: a port bound, then closed.
pub(crate) fn dead_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A listener that accepts connections and never answers: a frozen task, made by [`silent`].
pub(crate) struct Silent {
    pub(crate) addr: SocketAddr,
    /// Holds its connections; abort it to close them.
    pub(crate) task: tokio::task::JoinHandle<()>,
    /// How many connections it accepted.
    accepted: watch::Receiver<usize>,
}

impl Silent {
    /// Waits until a client has connected: a call to the frozen task is under way.
    pub(crate) async fn dialed(&mut self) {
        tokio::time::timeout(Duration::from_secs(30), self.accepted.wait_for(|&n| n > 0))
            .await
            .unwrap_or_else(|_| panic!("nothing dialed the silent task {} in 30 s", self.addr))
            .expect("the silent task ended");
    }
}

/// A [`Silent`] task on a free loopback port.
pub(crate) async fn silent() -> Silent {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (count, accepted) = watch::channel(0);
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            count.send_replace(held.len());
        }
    });
    Silent {
        addr,
        task,
        accepted,
    }
}

/// Whether a connect or update of `ctx` is under way, holding the context's lock. The probe
/// is an update that cannot apply (another local task): it waits for the lock, then fails
/// at once, changing nothing. Polled once, outside tokio's budget, so only the lock can
/// keep it pending.
pub(crate) fn lock_held(ctx: &Context) -> bool {
    let probe = ctx.update_server_def(
        placeholder("probe"),
        ConnectOptions::default().with_job_name("not-the-local-job"),
    );
    match tokio::task::unconstrained(probe).now_or_never() {
        None => true,
        Some(Err(Error::LocalTaskMissing { .. })) => false,
        Some(other) => panic!("the lock probe ended otherwise: {other:?}"),
    }
}

/// An open channel to `addr` (TCP_NODELAY on our side too).
pub(crate) async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .tcp_nodelay(true)
        .connect()
        .await
        .unwrap()
}

/// The raw EagerService client, with TensorFlow's message size limits.
pub(crate) async fn eager(addr: SocketAddr) -> EagerServiceClient<Channel> {
    EagerServiceClient::new(channel(addr).await)
        .max_decoding_message_size(i32::MAX as usize)
        .max_encoding_message_size(i32::MAX as usize)
}

/// The raw WorkerService client.
pub(crate) async fn worker(addr: SocketAddr) -> WorkerServiceClient<Channel> {
    WorkerServiceClient::new(channel(addr).await)
}

/// A prost codec for tonic's generic client and server (`tonic::client::Grpc`,
/// `tonic::server::Grpc`), to call or serve paths the generated stubs do not have.
pub(crate) struct ProtoCodec<E, D>(PhantomData<(E, D)>);

impl<E, D> Default for ProtoCodec<E, D> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

pub(crate) struct ProtoEncoder<E>(PhantomData<E>);
pub(crate) struct ProtoDecoder<D>(PhantomData<D>);

impl<E, D> Codec for ProtoCodec<E, D>
where
    E: prost::Message + Send + 'static,
    D: prost::Message + Default + Send + 'static,
{
    type Encode = E;
    type Decode = D;
    type Encoder = ProtoEncoder<E>;
    type Decoder = ProtoDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        ProtoEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProtoDecoder(PhantomData)
    }
}

impl<E: prost::Message> Encoder for ProtoEncoder<E> {
    type Item = E;
    type Error = Status;

    fn encode(&mut self, item: E, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

impl<D: prost::Message + Default> Decoder for ProtoDecoder<D> {
    type Item = D;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<D>, Status> {
        D::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// Calls `path` (`/pkg.Service/Method`) with an empty request and returns the status.
pub(crate) async fn call_path(addr: SocketAddr, path: &'static str) -> Result<(), Status> {
    let mut grpc = tonic::client::Grpc::new(channel(addr).await);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(e.to_string()))?;
    let codec =
        ProtoCodec::<cluster_proto::GetStatusRequest, cluster_proto::GetStatusResponse>::default();
    grpc.unary(
        tonic::Request::new(cluster_proto::GetStatusRequest {}),
        tonic::codegen::http::uri::PathAndQuery::from_static(path),
        codec,
    )
    .await
    .map(|_| ())
}
