//! Requests to a TaskServer, through the services a started server answers with (its real
//! handlers, `CreateContext`'s lean decoder included), called in-process: no socket.

use std::future::poll_fn;
use std::sync::OnceLock;

use bytes::Bytes;
use cluster_spec::ClusterSpec;
use http_body_util::{BodyExt, Full};
use remote_connect::tonic::codegen::{Service, http};
use remote_connect::tonic::service::Routes;
use remote_connect::{LocalDevice, TaskServer};
use tokio::runtime::Runtime;

/// What a request may ask for: every method the TaskServer serves or answers UNIMPLEMENTED,
/// a WorkerService method it does not register, and a service it does not serve.
const METHODS: &[&str] = &[
    "/tensorflow.WorkerService/GetStatus",
    "/tensorflow.eager.EagerService/CreateContext",
    "/tensorflow.eager.EagerService/UpdateContext",
    "/tensorflow.eager.EagerService/KeepAlive",
    "/tensorflow.eager.EagerService/CloseContext",
    "/tensorflow.eager.EagerService/Enqueue",
    "/tensorflow.eager.EagerService/StreamingEnqueue",
    "/tensorflow.eager.EagerService/WaitQueueDone",
    "/tensorflow.eager.EagerService/RunComponentFunction",
    "/tensorflow.WorkerService/RunGraph",
    "/tensorflow.MasterService/CreateSession",
];

/// The most requests one input sends, so that each run stays short.
const MAX_REQUESTS: usize = 16;

/// The cluster the server is task 0 of `worker` in.
const CLUSTER: &str =
    r#"{"worker": ["localhost:2222", "localhost:2223"], "ps": ["localhost:2224"]}"#;

/// A sequence of requests to a fresh server for `worker` task 0 (a CPU and a GPU), each
/// answered before the next is sent, so that one input can create a context and then update,
/// touch or close it. Each request is a byte, then a 16-bit little-endian length (cut to the
/// bytes left), then that many bytes of message. The byte's low four bits pick the method
/// (modulo 11: GetStatus, the eight EagerService methods, a WorkerService method the server
/// does not register, a service it does not serve), bits 4 and 5 the framing: a plain gRPC
/// frame, a gzip or a deflate one (the message is the compressed bytes), or the message sent
/// as the whole HTTP body, unframed. Every request must be answered with a gRPC status; a
/// panic anywhere is a bug.
pub fn task_server(data: &[u8]) {
    let mut routes = TaskServer::builder(cluster().clone(), "worker", 0)
        .with_devices(vec![LocalDevice::cpu(), gpu()])
        .into_routes()
        .expect("worker 0 is in the cluster");
    runtime().block_on(async {
        let mut rest = data;
        for _ in 0..MAX_REQUESTS {
            let Some((&head, tail)) = rest.split_first() else {
                break;
            };
            let (len, tail) = match tail {
                [a, b, tail @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), tail),
                _ => (0, &[][..]),
            };
            let (message, tail) = tail.split_at(len.min(tail.len()));
            rest = tail;
            let method = METHODS[usize::from(head & 0x0f) % METHODS.len()];
            answer(&mut routes, request(method, head >> 4 & 0b11, message)).await;
        }
    });
}

/// `method`'s request carrying `message` framed as `framing` says (see [`task_server`]).
fn request(method: &str, framing: u8, message: &[u8]) -> http::Request<Full<Bytes>> {
    let encoding = match framing {
        1 => Some("gzip"),
        2 => Some("deflate"),
        _ => None,
    };
    let body = if framing == 3 {
        Bytes::copy_from_slice(message)
    } else {
        let mut frame = Vec::with_capacity(5 + message.len());
        frame.push(u8::from(encoding.is_some()));
        // At most 2^16 - 1 bytes: the input's length field is 16 bits.
        frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
        frame.extend_from_slice(message);
        Bytes::from(frame)
    };
    let mut builder = http::Request::post(method)
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(encoding) = encoding {
        builder = builder.header("grpc-encoding", encoding);
    }
    builder
        .body(Full::new(body))
        .expect("a well-formed request")
}

/// Sends `request` and checks that it is answered with HTTP 200 and a valid gRPC status, in
/// the headers (an error at once) or in the trailers after the message.
async fn answer(routes: &mut Routes, request: http::Request<Full<Bytes>>) {
    poll_fn(|cx| Service::<http::Request<Full<Bytes>>>::poll_ready(routes, cx))
        .await
        .unwrap_or_else(|never| match never {});
    let response = routes
        .call(request)
        .await
        .unwrap_or_else(|never| match never {});
    assert_eq!(response.status(), http::StatusCode::OK);
    let in_headers = response.headers().get("grpc-status").cloned();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the response body reads to its end");
    let status = in_headers
        .or_else(|| body.trailers().and_then(|t| t.get("grpc-status").cloned()))
        .expect("every answer carries a grpc-status");
    let code: Option<u8> = status.to_str().ok().and_then(|s| s.parse().ok());
    assert!(
        code.is_some_and(|c| c <= 16),
        "grpc-status {status:?} is not a gRPC code"
    );
}

/// One current-thread runtime for every input: the handlers never wait on I/O; the timer
/// is there for each request's deadline (`message_timeout`), which never fires here.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime")
    })
}

fn cluster() -> &'static ClusterSpec {
    static SPEC: OnceLock<ClusterSpec> = OnceLock::new();
    SPEC.get_or_init(|| ClusterSpec::from_json(CLUSTER).expect("a valid cluster"))
}

/// A GPU as a server on a GPU host reports it, so that contexts hold more than `CPU:0`.
fn gpu() -> LocalDevice {
    LocalDevice {
        device_type: "GPU".to_owned(),
        id: 0,
        memory_limit: 1 << 30,
        physical_device_desc: "device: 0, name: fuzz".to_owned(),
        bus_id: 1,
    }
}
