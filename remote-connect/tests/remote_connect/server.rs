//! The TaskServer's TensorFlow semantics, driven through the raw tonic clients as a TensorFlow
//! client would drive them.

use std::convert::Infallible;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use cluster_proto::eager::{
    CloseContextRequest, CreateContextRequest, EnqueueRequest, KeepAliveRequest,
    RunComponentFunctionRequest, UpdateContextRequest, WaitQueueDoneRequest,
};
use cluster_proto::{DeviceAttributes, GetStatusRequest, GetStatusResponse, ServerDef};
use cluster_spec::ClusterSpec;
use remote_connect::{Limits, LocalDevice, ServerError, TaskServer};
use tonic::Code;
use tonic::codegen::{BoxFuture, Service, http};
use tonic::server::{NamedService, UnaryService};

use crate::cluster::{ProtoCodec, call_path, channel, eager, placeholder, server, worker};

const CPU_MEMORY_LIMIT: i64 = 268_435_456;

fn create(id: u64, view: u64, keep_alive_secs: i64) -> CreateContextRequest {
    CreateContextRequest {
        context_id: id,
        context_view_id: view,
        keep_alive_secs,
        ..CreateContextRequest::default()
    }
}

fn device(name: &str) -> DeviceAttributes {
    DeviceAttributes {
        name: name.to_owned(),
        device_type: "CPU".to_owned(),
        memory_limit: CPU_MEMORY_LIMIT,
        incarnation: 7,
        xla_global_id: -1,
        ..DeviceAttributes::default()
    }
}

fn server_def(spec: &ClusterSpec, job: &str, task: i32) -> ServerDef {
    ServerDef {
        cluster: Some(spec.as_cluster_def()),
        job_name: job.to_owned(),
        task_index: task,
        protocol: "grpc".to_owned(),
        ..ServerDef::default()
    }
}

fn unknown_context(id: u64) -> String {
    format!(
        "Unable to find a context_id matching the specified one ({id}). Perhaps the worker was \
         restarted, or the context was GC'd?"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_status_reports_tensorflow_cpu_attributes() {
    let spec = ClusterSpec::builder()
        .job("foo", ["a:1", "b:1", "c:1", "d:1"])
        .build()
        .unwrap();
    let s = TaskServer::builder(spec, "foo", 3)
        .with_devices(vec![LocalDevice::cpu()])
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let other = server("worker").await;
    let response = worker(s.local_addr())
        .await
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.device_attributes.len(), 1);
    let cpu = &response.device_attributes[0];
    assert_eq!(cpu.name, "/job:foo/replica:0/task:3/device:CPU:0");
    assert_eq!(cpu.device_type, "CPU");
    assert_eq!(cpu.memory_limit, CPU_MEMORY_LIMIT);
    assert_ne!(cpu.incarnation, 0);
    assert_eq!(cpu.xla_global_id, -1);
    assert_eq!(s.devices(), ["/job:foo/replica:0/task:3/device:CPU:0"]);
    assert_eq!(s.device_attributes(), response.device_attributes);

    let theirs = worker(other.local_addr())
        .await
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        theirs.device_attributes[0].name,
        "/job:worker/replica:0/task:0/device:CPU:0"
    );
    assert_ne!(theirs.device_attributes[0].incarnation, cpu.incarnation);
    s.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_context_ids_and_views() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;

    let err = client.create_context(create(0, 0, 0)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "Failed to initialize remote for worker context due to invalid context id"
    );
    assert!(s.contexts().is_empty());

    let response = client
        .create_context(create(42, 3, 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response
            .device_attributes
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["/job:worker/replica:0/task:0/device:CPU:0"]
    );
    let err = client.create_context(create(42, 2, 0)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "EagerService:CreateContext failed. Context id: <42> already exists."
    );
    assert_eq!(s.contexts()[0].view_id, 3);

    // An equal view replaces the context (a worker that missed updates is re-created) ...
    client.create_context(create(42, 3, 60)).await.unwrap();
    let contexts = s.contexts();
    assert_eq!(contexts.len(), 1);
    assert_eq!((contexts[0].view_id, contexts[0].keep_alive_secs), (3, 60));
    // ... and so does a higher one.
    client.create_context(create(42, 9, 0)).await.unwrap();
    let contexts = s.contexts();
    assert_eq!(contexts.len(), 1);
    assert_eq!((contexts[0].id, contexts[0].view_id), (42, 9));

    // KeepAlive answers the view.
    let view = client
        .keep_alive(KeepAliveRequest { context_id: 42 })
        .await
        .unwrap()
        .into_inner()
        .context_view_id;
    assert_eq!(view, 9);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_context_adopts_the_server_defs_job_and_task() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    let spec = ClusterSpec::builder()
        .job(
            "foo",
            ["h:1", "h:2", "h:3", s.local_addr().to_string().as_str()],
        )
        .job("ps", ["p:1"])
        .build()
        .unwrap();
    let mut request = create(5, 0, 0);
    request.server_def = Some(server_def(&spec, "foo", 3));
    request.cluster_device_attributes = vec![
        device("/job:ps/replica:0/task:0/device:CPU:0"),
        device("/job:foo/replica:0/task:3/device:CPU:0"),
    ];
    let response = client.create_context(request).await.unwrap().into_inner();
    assert_eq!(
        response.device_attributes[0].name,
        "/job:foo/replica:0/task:3/device:CPU:0"
    );
    // Same incarnation: the device is the same, only renamed.
    assert_eq!(
        response.device_attributes[0].incarnation,
        s.device_attributes()[0].incarnation
    );
    let info = &s.contexts()[0];
    assert_eq!((info.job.as_str(), info.task), ("foo", 3));
    assert_eq!(
        info.devices,
        [
            "/job:foo/replica:0/task:3/device:CPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0"
        ]
    );
    // GetStatus still answers with the server's own name.
    assert_eq!(s.devices(), ["/job:worker/replica:0/task:0/device:CPU:0"]);
    let status = worker(s.local_addr())
        .await
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        status.device_attributes[0].name,
        "/job:worker/replica:0/task:0/device:CPU:0"
    );

    // A ServerDef whose cluster lacks its own job or task: TensorFlow's INTERNAL.
    for (job, task) in [("chief", 0), ("foo", 4)] {
        let mut request = create(6, 0, 0);
        request.server_def = Some(server_def(&spec, job, task));
        let err = client.create_context(request).await.unwrap_err();
        assert_eq!(err.code(), Code::Internal, "{job}:{task}");
        assert_eq!(
            err.message(),
            "Could not parse port for local server from \"\""
        );
    }
    assert_eq!(s.contexts().len(), 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_contexts_are_aborted_with_tensorflows_message() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    let err = client
        .keep_alive(KeepAliveRequest { context_id: 77 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    assert_eq!(err.message(), unknown_context(77));
    let err = client
        .update_context(UpdateContextRequest {
            context_id: 78,
            context_view_id: 1,
            ..UpdateContextRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    assert_eq!(err.message(), unknown_context(78));
    let err = s
        .lookup_device(79, "/job:worker/replica:0/task:0/device:CPU:0")
        .unwrap_err();
    assert!(matches!(err, ServerError::UnknownContext(79)));
    assert_eq!(err.to_string(), unknown_context(79));
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_context_moves_the_view_by_exactly_one() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    let spec = ClusterSpec::builder()
        .job("worker", [s.local_addr().to_string()])
        .job("ps", ["p:1", "p:2"])
        .build()
        .unwrap();
    let mut request = create(11, 0, 0);
    request.server_def = Some(server_def(&spec, "worker", 0));
    request.cluster_device_attributes = vec![device("/job:ps/replica:0/task:0/device:CPU:0")];
    client.create_context(request).await.unwrap();

    for bad in [0, 2, 5] {
        let err = client
            .update_context(UpdateContextRequest {
                context_id: 11,
                context_view_id: bad,
                ..UpdateContextRequest::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert_eq!(
            err.message(),
            format!(
                "EagerService:UpdateContext failed. Context id: <11> currently at view #0 but \
                 received update request at view #{bad}. View id should only be continuously \
                 incremented."
            )
        );
    }

    // Simplified update: no devices, only the view moves.
    let response = client
        .update_context(UpdateContextRequest {
            context_id: 11,
            context_view_id: 1,
            ..UpdateContextRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(response.device_attributes.is_empty());
    let info = &s.contexts()[0];
    assert_eq!(info.view_id, 1);
    assert_eq!(
        info.devices,
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0"
        ]
    );

    // Full update: the devices are replaced.
    let response = client
        .update_context(UpdateContextRequest {
            server_def: Some(server_def(&spec, "worker", 0)),
            cluster_device_attributes: vec![device("/job:ps/replica:0/task:1/device:CPU:0")],
            context_id: 11,
            context_view_id: 2,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.device_attributes[0].name,
        "/job:worker/replica:0/task:0/device:CPU:0"
    );
    let info = &s.contexts()[0];
    assert_eq!(info.view_id, 2);
    assert_eq!(
        info.devices,
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:1/device:CPU:0"
        ]
    );
    assert!(
        s.lookup_device(11, "/job:ps/replica:0/task:0/device:CPU:0")
            .is_err()
    );
    assert_eq!(
        s.lookup_device(11, "/job:ps/replica:0/task:1/device:CPU:0")
            .unwrap(),
        "/job:ps/replica:0/task:1/device:CPU:0"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_context_ignores_unknown_and_stale_views() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    client
        .close_context(CloseContextRequest {
            context_id: 1234,
            context_view_id: 0,
        })
        .await
        .unwrap();
    client.create_context(create(9, 0, 0)).await.unwrap();
    client
        .update_context(UpdateContextRequest {
            context_id: 9,
            context_view_id: 1,
            ..UpdateContextRequest::default()
        })
        .await
        .unwrap();
    // A close at the old view (a replaced task's old context) leaves the new one alone.
    client
        .close_context(CloseContextRequest {
            context_id: 9,
            context_view_id: 0,
        })
        .await
        .unwrap();
    assert_eq!(s.contexts().len(), 1);
    client
        .close_context(CloseContextRequest {
            context_id: 9,
            context_view_id: 1,
        })
        .await
        .unwrap();
    assert!(s.contexts().is_empty());
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_contexts_are_collected_touched_ones_survive() {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .unwrap();
    let s = TaskServer::builder(placeholder, "worker", 0)
        .with_devices(vec![LocalDevice::cpu()])
        .with_gc_interval(Duration::from_millis(100))
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let mut client = eager(s.local_addr()).await;
    // Timed from before the first create, so `created.elapsed()` never understates an idle
    // time: the checks below are logical, not windows a busy machine could miss.
    let created = Instant::now();
    client.create_context(create(1, 0, 1)).await.unwrap(); // idle 1 s: collected
    client.create_context(create(2, 0, 2)).await.unwrap(); // touched every 0.2 s: kept
    client.create_context(create(3, 0, 0)).await.unwrap(); // 0: never collected
    // Until 1 is gone, and on past the 2 s after which 2 would be gone untouched.
    let mut collected = false;
    while !collected || created.elapsed() < Duration::from_secs(3) {
        client
            .keep_alive(KeepAliveRequest { context_id: 2 })
            .await
            .unwrap();
        let ids: Vec<u64> = s.contexts().iter().map(|c| c.id).collect();
        let idle = created.elapsed();
        assert!(
            ids.contains(&2) && ids.contains(&3),
            "{ids:?} after {idle:?}"
        );
        if !ids.contains(&1) {
            assert!(idle > Duration::from_secs(1), "collected after {idle:?}");
            collected = true;
        }
        assert!(idle < Duration::from_secs(30), "not collected in {idle:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ids: Vec<u64> = s.contexts().iter().map(|c| c.id).collect();
    assert_eq!(ids, [2, 3]);
    let err = client
        .keep_alive(KeepAliveRequest { context_id: 1 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    assert_eq!(err.message(), unknown_context(1));
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operation_methods_answer_unimplemented_at_once() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    client.create_context(create(3, 0, 0)).await.unwrap();
    let limit = Duration::from_secs(1);
    let within = |f| tokio::time::timeout(limit, f);

    let err = within(client.enqueue(EnqueueRequest {
        context_id: 3,
        ..EnqueueRequest::default()
    }))
    .await
    .expect("Enqueue answers at once")
    .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err:?}");

    // A stream the client never ends: the server must answer without waiting for it.
    let open = tonic::codegen::tokio_stream::pending::<EnqueueRequest>();
    let err = tokio::time::timeout(limit, client.streaming_enqueue(open))
        .await
        .expect("StreamingEnqueue answers at once")
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err:?}");

    let err = tokio::time::timeout(
        limit,
        client.wait_queue_done(WaitQueueDoneRequest {
            context_id: 3,
            op_id: vec![1],
        }),
    )
    .await
    .expect("WaitQueueDone answers at once")
    .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err:?}");

    let err = tokio::time::timeout(
        limit,
        client.run_component_function(RunComponentFunctionRequest {
            context_id: 3,
            ..RunComponentFunctionRequest::default()
        }),
    )
    .await
    .expect("RunComponentFunction answers at once")
    .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err:?}");

    // WorkerService methods other than GetStatus, and unknown services.
    for path in [
        "/tensorflow.WorkerService/RecvTensor",
        "/tensorflow.WorkerService/RunGraph",
        "/tensorflow.MasterService/CreateSession",
        "/no.Such/Method",
    ] {
        let err = tokio::time::timeout(limit, call_path(s.local_addr(), path))
            .await
            .expect("answers at once")
            .unwrap_err();
        assert_eq!(err.code(), Code::Unimplemented, "{path}: {err:?}");
    }
    // The context is untouched by all this.
    assert_eq!(s.contexts().len(), 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_device_knows_only_the_devices_the_context_was_given() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    let mut request = create(21, 0, 0);
    request.cluster_device_attributes = vec![
        device("/job:ps/replica:0/task:0/device:CPU:0"),
        device("/job:worker/replica:0/task:0/device:CPU:0"),
        device("/job:ps/replica:0/task:0/device:CPU:0"),
    ];
    client.create_context(request).await.unwrap();
    // Its own devices first; every name once.
    assert_eq!(
        s.contexts()[0].devices,
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0"
        ]
    );
    assert_eq!(
        s.lookup_device(21, "/job:ps/replica:0/task:0/device:CPU:0")
            .unwrap(),
        "/job:ps/replica:0/task:0/device:CPU:0"
    );
    assert_eq!(
        s.lookup_device(21, "/job:worker/replica:0/task:0/device:CPU:0")
            .unwrap(),
        "/job:worker/replica:0/task:0/device:CPU:0"
    );
    for hidden in [
        "/job:worker/replica:0/task:1/device:CPU:0",
        "/job:ps/replica:0/task:0/device:GPU:0",
        "not a device",
    ] {
        let err = s.lookup_device(21, hidden).unwrap_err();
        assert!(matches!(err, ServerError::UnknownDevice(_)), "{err:?}");
        assert_eq!(err.to_string(), format!("{hidden} unknown device."));
    }
    // Names are kept as sent (parsed only at lookup, as TensorFlow's worker parses them when
    // it uses them): a malformed one never matches a well-formed lookup.
    let mut request = create(22, 0, 0);
    request.cluster_device_attributes = vec![device("/job:ps/device:CPU:0"), device("garbage")];
    client.create_context(request).await.unwrap();
    let context = s.contexts().into_iter().find(|c| c.id == 22).unwrap();
    assert_eq!(context.devices[1..], ["/job:ps/device:CPU:0", "garbage"]);
    assert!(
        s.lookup_device(22, "/job:ps/replica:0/task:0/device:CPU:0")
            .is_err()
    );
    s.shutdown().await.unwrap();
}

/// A user service mounted next to TensorFlow's: `/test.Echo/Call` answers one device.
#[derive(Clone)]
struct Echo;

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

struct EchoCall;

impl UnaryService<GetStatusRequest> for EchoCall {
    type Response = GetStatusResponse;
    type Future = std::future::Ready<Result<tonic::Response<GetStatusResponse>, tonic::Status>>;

    fn call(&mut self, _request: tonic::Request<GetStatusRequest>) -> Self::Future {
        std::future::ready(Ok(tonic::Response::new(GetStatusResponse {
            device_attributes: vec![device("/job:echo/replica:0/task:0/device:CPU:0")],
        })))
    }
}

impl Service<http::Request<tonic::body::Body>> for Echo {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let codec = ProtoCodec::<GetStatusResponse, GetStatusRequest>::default();
            let mut grpc = tonic::server::Grpc::new(codec);
            Ok(grpc.unary(EchoCall, request).await)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_routes_share_the_port() {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .unwrap();
    let s = TaskServer::builder(placeholder, "worker", 0)
        .with_devices(vec![LocalDevice::cpu()])
        .with_routes(tonic::service::Routes::new(Echo))
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel(s.local_addr()).await);
    grpc.ready().await.unwrap();
    let response = grpc
        .unary(
            tonic::Request::new(GetStatusRequest {}),
            http::uri::PathAndQuery::from_static("/test.Echo/Call"),
            ProtoCodec::<GetStatusRequest, GetStatusResponse>::default(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.device_attributes[0].name,
        "/job:echo/replica:0/task:0/device:CPU:0"
    );
    // TensorFlow's services still answer on the same port.
    let status = worker(s.local_addr())
        .await
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        status.device_attributes[0].name,
        "/job:worker/replica:0/task:0/device:CPU:0"
    );
    eager(s.local_addr())
        .await
        .create_context(create(1, 0, 0))
        .await
        .unwrap();
    assert_eq!(s.contexts().len(), 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_what_is_in_flight_after_its_grace() {
    let limits = Limits::default().with_message_timeout(Duration::from_secs(60));
    let s = TaskServer::builder(placeholder("worker"), "worker", 0)
        .with_bind("127.0.0.1:0".parse().unwrap())
        .with_limits(limits)
        .start()
        .await
        .unwrap();
    let addr = s.local_addr();
    // A request whose message never comes: in flight for its 60 s message timeout.
    let mut grpc = tonic::client::Grpc::new(channel(addr).await);
    grpc.ready().await.unwrap();
    let in_flight = tokio::spawn(async move {
        grpc.client_streaming(
            tonic::Request::new(tonic::codegen::tokio_stream::pending::<GetStatusRequest>()),
            http::uri::PathAndQuery::from_static("/tensorflow.WorkerService/GetStatus"),
            ProtoCodec::<GetStatusRequest, GetStatusResponse>::default(),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grace = Duration::from_millis(300);
    let start = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), s.shutdown_within(grace))
        .await
        .expect("shutdown returns after its grace")
        .unwrap();
    let took = start.elapsed();
    // The request held the graceful phase to its end, and no longer.
    assert!(took >= grace && took < Duration::from_secs(2), "{took:?}");
    let ended = tokio::time::timeout(Duration::from_secs(2), in_flight)
        .await
        .expect("the request ends with its connection")
        .unwrap();
    assert!(ended.is_err(), "{ended:?}");
    drop(std::net::TcpListener::bind(addr).expect("the port is free after shutdown"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_frees_the_port() {
    let s = server("worker").await;
    let addr = s.local_addr();
    // With a client connected, which graceful shutdown must not wait on forever.
    let mut client = worker(addr).await;
    client.get_status(GetStatusRequest {}).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), s.shutdown())
        .await
        .expect("shutdown returns")
        .unwrap();
    let again = std::net::TcpListener::bind(addr).expect("the port is free after shutdown");
    drop(again);
    // And a TaskServer can serve on it again.
    let s = crate::cluster::server_at("worker", addr).await;
    assert_eq!(s.local_addr(), addr);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_past_tonics_default_limit_are_accepted() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    let mut request = create(8, 0, 0);
    // 5 devices with 1 MiB descriptions: 5 MiB, past tonic's 4 MiB default.
    let padding = "x".repeat(1 << 20);
    request.cluster_device_attributes = (0..5)
        .map(|t| DeviceAttributes {
            physical_device_desc: padding.clone(),
            ..device(&format!("/job:ps/replica:0/task:{t}/device:CPU:0"))
        })
        .collect();
    assert!(prost::Message::encoded_len(&request) > 5 << 20);
    client.create_context(request).await.unwrap();
    assert_eq!(s.contexts()[0].devices.len(), 6);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_do_not_wait_for_delayed_acks() {
    // A response of more than one HTTP/2 frame (16 KiB): without TCP_NODELAY its tail waits
    // for the client's delayed ACK (seen: every call 44 ms). A bare CPU:0 fits in one, and
    // never showed it.
    let s = TaskServer::builder(placeholder("worker"), "worker", 0)
        .with_devices(vec![LocalDevice {
            physical_device_desc: "x".repeat(20_000),
            ..LocalDevice::cpu()
        }])
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let mut client = worker(s.local_addr()).await;
    client.get_status(GetStatusRequest {}).await.unwrap();
    let mut times = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        client.get_status(GetStatusRequest {}).await.unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    // A response that waits for the client's delayed ACK takes 40 ms at least (Linux's
    // minimum delay), however fast the machine; half that leaves a busy debug build room.
    assert!(median < Duration::from_millis(20), "median {median:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_existing_contexts_starts_the_worker_over() {
    let s = server("worker").await;
    let mut client = eager(s.local_addr()).await;
    for id in [31, 32] {
        client.create_context(create(id, 0, 0)).await.unwrap();
    }
    assert_eq!(s.contexts().len(), 2);
    let mut request = create(33, 0, 0);
    request.clear_existing_contexts = true;
    client.create_context(request).await.unwrap();
    let ids: Vec<u64> = s.contexts().iter().map(|c| c.id).collect();
    assert_eq!(ids, [33]);
    s.shutdown().await.unwrap();
}

/// Found by the `task_server` fuzz target (its corpus keeps the input,
/// oom-declared-length-reserved.bin): tonic reserves the length a message header declares
/// before the bytes arrive, so 11 bytes declaring a 2-GiB message made the server allocate
/// 2 GiB. The server now hands tonic whole messages only: a request that ends inside one is
/// refused, having cost what was sent.
#[test]
fn a_declared_message_length_costs_nothing_until_sent() {
    use http_body_util::{BodyExt, Full};

    let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222"]}"#).unwrap();
    let mut routes = TaskServer::builder(spec, "worker", 0)
        .with_devices(vec![LocalDevice::cpu()])
        .into_routes()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    for path in [
        "/tensorflow.WorkerService/GetStatus",
        "/tensorflow.eager.EagerService/CreateContext",
        "/tensorflow.eager.EagerService/KeepAlive",
    ] {
        // An uncompressed message of i32::MAX bytes (TensorFlow's limit), six of them sent.
        let body = bytes::Bytes::from_static(&[0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6]);
        let request = http::Request::post(path)
            .header("content-type", "application/grpc")
            .body(Full::new(body))
            .unwrap();
        let (code, bytes) = memory_meter::peak(|| {
            runtime.block_on(async {
                let response = routes.call(request).await.unwrap();
                let in_headers = response.headers().get("grpc-status").cloned();
                let body = response.into_body().collect().await.unwrap();
                let status = in_headers
                    .or_else(|| body.trailers().and_then(|t| t.get("grpc-status").cloned()))
                    .unwrap();
                status.to_str().unwrap().parse::<i32>().unwrap()
            })
        });
        assert_ne!(code, Code::Ok as i32, "{path}");
        assert!(bytes < 1 << 20, "{path}: {bytes} bytes of heap");
    }
}
