//! `Limits`: each limit of a TaskServer, set small, reached by a client in the test and
//! checked logically (what is refused, what is closed, what still works), not by timing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cluster_proto::DeviceAttributes;
use cluster_proto::eager::{CloseContextRequest, CreateContextRequest, KeepAliveRequest};
use remote_connect::{ConnectOptions, Context, Limits, RunningServer, TaskServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::Code;

use crate::cluster::{eager, placeholder, worker};

/// HTTP/2's client preface and an empty SETTINGS frame: what every client sends first.
const HELLO: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

async fn limited(limits: Limits) -> RunningServer {
    TaskServer::builder(placeholder("worker"), "worker", 0)
        .with_bind("127.0.0.1:0".parse().unwrap())
        .with_gc_interval(Duration::from_millis(20))
        .with_limits(limits)
        .start()
        .await
        .unwrap()
}

fn spec_of(s: &RunningServer) -> cluster_spec::ClusterSpec {
    cluster_spec::ClusterSpec::builder()
        .job("worker", [s.local_addr().to_string()])
        .build()
        .unwrap()
}

/// Connects a `Context` to `s` and closes it: the legitimate client every test keeps served.
async fn a_connect_works(s: &RunningServer) {
    let ctx = Context::new();
    ctx.connect_to_cluster(spec_of(s), ConnectOptions::default())
        .await
        .expect("a legitimate connect succeeds");
    ctx.close().await.unwrap();
}

/// Everything the server sends on `stream` until it closes it (or 5 s pass).
pub(crate) async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut received)).await;
    received
}

/// Polls `condition` every 10 ms for up to 5 s.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < Duration::from_secs(5), "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_limit_is_announced_in_settings() {
    let s = limited(Limits::default().with_max_streams_per_connection(7)).await;
    let mut stream = TcpStream::connect(s.local_addr()).await.unwrap();
    stream.write_all(HELLO).await.unwrap();
    // The server's first frame is its SETTINGS: 6-byte entries after a 9-byte header.
    let mut header = [0; 9];
    stream.read_exact(&mut header).await.unwrap();
    assert_eq!(header[3], 4, "a SETTINGS frame first");
    let len = usize::from(header[2]) | usize::from(header[1]) << 8;
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).await.unwrap();
    let settings: Vec<(u16, u32)> = payload
        .chunks(6)
        .map(|e| {
            (
                u16::from_be_bytes([e[0], e[1]]),
                u32::from_be_bytes([e[2], e[3], e[4], e[5]]),
            )
        })
        .collect();
    // SETTINGS_MAX_CONCURRENT_STREAMS is setting 3.
    assert!(settings.contains(&(3, 7)), "{settings:?}");
    // Shutting down waits for connections to close.
    drop(stream);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_limit_is_told_why_and_closed() {
    let s = limited(Limits::default().with_max_connections(2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(s.local_addr()).await.unwrap();
        stream.write_all(HELLO).await.unwrap();
        // Admitted once the server speaks HTTP/2 (its SETTINGS): until then the connection
        // is one that has not started, which a new connection would take the place of.
        let mut header = [0; 9];
        stream.read_exact(&mut header).await.unwrap();
        assert_eq!(header[3], 4, "the server's SETTINGS");
        held.push(stream);
    }
    assert_eq!(s.open_connections(), 2);
    let mut third = TcpStream::connect(s.local_addr()).await.unwrap();
    let said = read_until_closed(&mut third).await;
    let text = String::from_utf8_lossy(&said);
    assert!(
        text.contains("the server holds its limit of 2 connections (max_connections)"),
        "{text:?}"
    );
    // GOAWAY (type 7) after the server's SETTINGS.
    assert_eq!(said[3], 4);
    assert_eq!(said[9 + 3], 7);
    // Closing one makes room.
    drop(held.pop());
    eventually("one connection open", || s.open_connections() == 1).await;
    a_connect_works(&s).await;
    drop(held);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_do_not_start_http2_in_time_are_closed() {
    let s = limited(Limits::default().with_handshake_timeout(Duration::from_millis(300))).await;
    let mut silent = TcpStream::connect(s.local_addr()).await.unwrap();
    let mut preface_only = TcpStream::connect(s.local_addr()).await.unwrap();
    preface_only.write_all(&HELLO[..24]).await.unwrap();
    eventually("both waiting", || s.open_connections() == 2).await;
    // Served meanwhile.
    a_connect_works(&s).await;
    let start = Instant::now();
    assert!(read_until_closed(&mut silent).await.is_empty());
    assert!(read_until_closed(&mut preface_only).await.is_empty());
    // Closed by the server, which takes at least the timeout from the connect.
    assert!(start.elapsed() < Duration::from_secs(5));
    eventually("none open", || s.open_connections() == 0).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_idle_past_the_timeout_is_closed_and_the_client_reconnects() {
    let s = limited(Limits::default().with_idle_timeout(Some(Duration::from_millis(300)))).await;
    let mut client = worker(s.local_addr()).await;
    client
        .get_status(cluster_proto::GetStatusRequest {})
        .await
        .unwrap();
    assert_eq!(s.open_connections(), 1);
    eventually("the idle connection closed", || s.open_connections() == 0).await;
    // The channel reconnects for its next call. A call made before the client read the close
    // fails as never sent (CANCELLED: the connection closed under it), and is sent again, as
    // gRPC's transparent retry and this crate's client do; seen once on a loaded machine.
    let again = client.get_status(cluster_proto::GetStatusRequest {}).await;
    if let Err(status) = again {
        assert_eq!(status.code(), tonic::Code::Cancelled, "{status:?}");
        client
            .get_status(cluster_proto::GetStatusRequest {})
            .await
            .unwrap();
    }
    assert_eq!(s.open_connections(), 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_with_a_request_in_flight_is_not_idle() {
    let s = limited(Limits::default().with_idle_timeout(Some(Duration::from_millis(200)))).await;
    let addr = s.local_addr();
    // A request whose message never arrives whole stays in flight (until message_timeout).
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(HELLO).await.unwrap();
    stream.write_all(&headers_frame(1, addr)).await.unwrap();
    stream
        .write_all(&data_frame(1, &[0, 0, 0, 1, 0, 1, 2]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(s.open_connections(), 1, "closed with a request in flight");
    drop(stream);
    s.shutdown().await.unwrap();
}

/// A HEADERS frame opening stream `id`: a KeepAlive call, HPACK literals without indexing.
fn headers_frame(id: u32, addr: SocketAddr) -> Vec<u8> {
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http (static table)
    let mut literal = |name: &str, value: &str| {
        block.push(0);
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    };
    literal(":path", "/tensorflow.eager.EagerService/KeepAlive");
    literal(":authority", &addr.to_string());
    literal("content-type", "application/grpc");
    literal("te", "trailers");
    frame(1, 0x4, id, &block)
}

/// A DATA frame on stream `id`, not ending it.
fn data_frame(id: u32, payload: &[u8]) -> Vec<u8> {
    frame(0, 0, id, payload)
}

fn frame(kind: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn device(name: String) -> DeviceAttributes {
    DeviceAttributes {
        name,
        device_type: "CPU".into(),
        ..DeviceAttributes::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_request_memory_is_refused() {
    let s = limited(Limits::default().with_request_memory(256 << 10)).await;
    let mut client = eager(s.local_addr()).await;
    // 2,000 devices cost far more decoded than they are long, and more than 256 KiB.
    let devices = (0..2000)
        .map(|i| device(format!("/job:worker/replica:0/task:{i}/device:CPU:0")))
        .collect();
    let err = client
        .create_context(CreateContextRequest {
            context_id: 1,
            cluster_device_attributes: devices,
            ..CreateContextRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    assert!(err.message().contains("request_memory"), "{err}");
    assert!(s.contexts().is_empty());
    // The memory is given back: a connect still works, many times.
    for _ in 0..3 {
        a_connect_works(&s).await;
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_context_limits_idle_contexts_without_keep_alive_make_room_or_it_is_refused() {
    let s = limited(Limits::default().with_max_contexts(2)).await;
    let mut client = eager(s.local_addr()).await;
    let create = |id, keep_alive_secs| CreateContextRequest {
        context_id: id,
        keep_alive_secs,
        ..CreateContextRequest::default()
    };
    let ids = |s: &RunningServer| s.contexts().iter().map(|c| c.id).collect::<Vec<_>>();
    // Without keep-alive: the least recently used one makes room.
    client.create_context(create(1, 0)).await.unwrap();
    client.create_context(create(2, 0)).await.unwrap();
    client
        .keep_alive(KeepAliveRequest { context_id: 1 })
        .await
        .unwrap();
    client.create_context(create(3, 600)).await.unwrap();
    assert_eq!(ids(&s), [1, 3], "context 2 was the least recently used");
    // Replacing a context is no new one.
    client.create_context(create(3, 600)).await.unwrap();
    client.create_context(create(4, 600)).await.unwrap();
    assert_eq!(ids(&s), [3, 4]);
    // With keep-alive only: refused.
    let err = client.create_context(create(5, 600)).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    assert!(err.message().contains("max_contexts"), "{err}");
    client
        .close_context(CloseContextRequest {
            context_id: 3,
            context_view_id: 0,
        })
        .await
        .unwrap();
    client.create_context(create(5, 600)).await.unwrap();
    assert_eq!(ids(&s), [4, 5]);
    s.shutdown().await.unwrap();

    let s = limited(Limits::default().with_context_memory(64 << 10)).await;
    let mut client = eager(s.local_addr()).await;
    let devices = |n: usize| {
        (0..n)
            .map(|i| device(format!("/job:worker/replica:0/task:{i}/device:CPU:0")))
            .collect::<Vec<_>>()
    };
    let err = client
        .create_context(CreateContextRequest {
            context_id: 1,
            cluster_device_attributes: devices(2000),
            ..CreateContextRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    assert!(err.message().contains("context_memory"), "{err}");
    client
        .create_context(CreateContextRequest {
            context_id: 1,
            cluster_device_attributes: devices(100),
            ..CreateContextRequest::default()
        })
        .await
        .unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_without_keep_alive_are_collected_only_with_an_idle_limit() {
    let s =
        limited(Limits::default().with_context_idle_limit(Some(Duration::from_millis(300)))).await;
    let mut client = eager(s.local_addr()).await;
    for id in [1, 2] {
        client
            .create_context(CreateContextRequest {
                context_id: id,
                ..CreateContextRequest::default()
            })
            .await
            .unwrap();
    }
    // Context 1 is kept busy; context 2 is left alone.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(900) {
        client
            .keep_alive(KeepAliveRequest { context_id: 1 })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ids: Vec<u64> = s.contexts().iter().map(|c| c.id).collect();
    assert_eq!(ids, [1], "the idle one is collected, the busy one kept");
    s.shutdown().await.unwrap();

    // By default (as TensorFlow) a context without keep-alive lives until closed.
    let s = limited(Limits::default()).await;
    let mut client = eager(s.local_addr()).await;
    client
        .create_context(CreateContextRequest {
            context_id: 1,
            ..CreateContextRequest::default()
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.contexts().len(), 1);
    s.shutdown().await.unwrap();
}
