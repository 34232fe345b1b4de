//! `Context::connect_to_cluster` against in-process servers on loopback: large clusters,
//! ParameterServerStrategy filters, dead, silent, failing, killed and restarted tasks,
//! update versus reset on reconnect, resolvers and their master.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cluster_proto::eager::eager_service_server::{EagerService, EagerServiceServer};
use cluster_proto::eager::{
    CloseContextRequest, CloseContextResponse, CreateContextRequest, CreateContextResponse,
    EnqueueRequest, EnqueueResponse, KeepAliveRequest, KeepAliveResponse,
    RunComponentFunctionRequest, RunComponentFunctionResponse, UpdateContextRequest,
    UpdateContextResponse, WaitQueueDoneRequest, WaitQueueDoneResponse,
};
use cluster_proto::worker_service_server::{WorkerService, WorkerServiceServer};
use cluster_proto::{
    DeviceAttributes, GetStatusRequest, GetStatusResponse, RecvTensorRequest, RecvTensorResponse,
};
use cluster_resolver::SimpleClusterResolver;
use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;
use remote_connect::{
    ConnectOptions, Context, Error, LocalDevice, RunningServer, Stage, TaskError, TaskHealth,
    TaskId, TaskServer,
};
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::{dead_addr, fast, server_at, servers, shutdown_all, silent};

/// Every server's contexts as `(id, view)`.
fn contexts(servers: &[RunningServer]) -> Vec<Vec<(u64, u64)>> {
    servers
        .iter()
        .map(|s| s.contexts().iter().map(|c| (c.id, c.view_id)).collect())
        .collect()
}

fn spec_of(jobs: &[(&str, Vec<String>)]) -> ClusterSpec {
    let mut builder = ClusterSpec::builder();
    for (job, addresses) in jobs {
        builder = builder.job(job, addresses.clone());
    }
    builder.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_all_discovered_and_given_contexts() {
    let (spec, servers) = servers(&[("ps", 16), ("worker", 48)]).await;
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, ConnectOptions::default())
        .await
        .unwrap();
    let id = ctx.context_id();
    assert_ne!(id, 0);
    assert_eq!(ctx.context_view_id(), 0);
    assert_eq!(ctx.remote_tasks().len(), 64);
    assert_eq!(ctx.list_logical_devices().len(), 65);
    for (i, s) in servers.iter().enumerate() {
        let list = s.contexts();
        assert_eq!(list.len(), 1, "server {i}");
        assert_eq!((list[0].id, list[0].view_id), (id, 0));
        // No filters: every task sees all 65 devices.
        assert_eq!(list[0].devices.len(), 65, "server {i}");
    }
    ctx.close().await.unwrap();
    assert_eq!(ctx.context_id(), 0);
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    shutdown_all(servers).await;
}

/// TensorFlow's ParameterServerStrategy rule, written out: workers see the ps, the chief and
/// themselves; the ps see the workers, the chief and themselves; anyone else sees everything.
fn ps_rule(task: &TaskId, device: &str) -> bool {
    let job = device.split('/').nth(1).unwrap().trim_start_matches("job:");
    let own = device.starts_with(&format!("{task}/"));
    match task.job.as_str() {
        "worker" => own || job == "ps" || job == "chief",
        "ps" => own || job == "worker" || job == "chief",
        _ => true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_server_filters_give_each_task_tensorflows_devices() {
    let (spec, servers) = servers(&[("chief", 1), ("ps", 2), ("worker", 3)]).await;
    let filters = ClusterDeviceFilters::parameter_server(&spec);
    let ctx = Context::new();
    ctx.connect_to_cluster(
        spec,
        ConnectOptions::default().with_cluster_device_filters(filters),
    )
    .await
    .unwrap();
    // Every device in the order TensorFlow sends them: remote tasks (jobs sorted), then ours.
    let mut all: Vec<String> = [
        "chief:0", "ps:0", "ps:1", "worker:0", "worker:1", "worker:2",
    ]
    .iter()
    .map(|t| {
        let (job, task) = t.split_once(':').unwrap();
        format!("/job:{job}/replica:0/task:{task}/device:CPU:0")
    })
    .collect();
    all.push("/job:localhost/replica:0/task:0/device:CPU:0".to_owned());
    // The master itself is not filtered.
    assert_eq!(ctx.list_logical_devices().len(), 7);

    let tasks = ctx.remote_tasks();
    assert_eq!(tasks.len(), 6);
    let by_address: BTreeMap<String, &RunningServer> = servers
        .iter()
        .map(|s| (s.local_addr().to_string(), s))
        .collect();
    for (task, address) in &tasks {
        let expected: Vec<String> = all.iter().filter(|d| ps_rule(task, d)).cloned().collect();
        assert_eq!(ctx.visible_devices(task).unwrap(), expected, "{task}");
        let s = by_address[address];
        let info = &s.contexts()[0];
        // The server lists its own devices first, then the others it was given.
        let own = format!("{task}/device:CPU:0");
        let mut on_server = vec![own.clone()];
        on_server.extend(expected.iter().filter(|d| **d != own).cloned());
        assert_eq!(info.devices, on_server, "{task}");
        for hidden in all.iter().filter(|d| !ps_rule(task, d)) {
            let err = s.lookup_device(ctx.context_id(), hidden).unwrap_err();
            assert_eq!(err.to_string(), format!("{hidden} unknown device."));
        }
    }
    let worker = TaskId::new("worker", 0);
    assert_eq!(
        ctx.visible_devices(&worker).unwrap(),
        [
            "/job:chief/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:1/device:CPU:0",
            "/job:worker/replica:0/task:0/device:CPU:0",
        ]
    );
    assert!(matches!(
        ctx.visible_devices(&TaskId::new("worker", 9)),
        Err(Error::UnknownTask(_))
    ));
    ctx.close().await.unwrap();
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_and_silent_tasks_are_all_listed_within_the_deadline() {
    let (_, good) = servers(&[("ps", 1), ("worker", 2)]).await;
    let dead = dead_addr();
    let quiet = silent().await;
    // Bound, never accepting: the kernel completes the handshake, nobody ever reads.
    let backlog = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stuck = backlog.local_addr().unwrap();
    let addr = |i: usize| good[i].local_addr().to_string();
    let spec = spec_of(&[
        ("ps", vec![addr(0), stuck.to_string()]),
        (
            "worker",
            vec![addr(1), dead.to_string(), addr(2), quiet.addr.to_string()],
        ),
    ]);
    let ctx = Context::new();
    let start = Instant::now();
    let err = ctx.connect_to_cluster(spec, fast()).await.unwrap_err();
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    let Error::Tasks {
        stage,
        total,
        failures,
    } = &err
    else {
        panic!("not a task failure: {err:?}");
    };
    assert_eq!(*stage, Stage::Discovery);
    assert_eq!(*total, 6);
    let failed: Vec<(String, String)> = failures
        .iter()
        .map(|f| (f.task.to_string(), f.address.clone()))
        .collect();
    assert_eq!(
        failed,
        [
            ("/job:ps/replica:0/task:1".to_owned(), stuck.to_string()),
            ("/job:worker/replica:0/task:1".to_owned(), dead.to_string()),
            (
                "/job:worker/replica:0/task:3".to_owned(),
                quiet.addr.to_string()
            ),
        ]
    );
    assert!(
        matches!(failures[1].error, TaskError::Connect { .. }),
        "{:?}",
        failures[1].error
    );
    for i in [0, 2] {
        assert!(
            matches!(failures[i].error, TaskError::Timeout { .. }),
            "{:?}",
            failures[i].error
        );
    }
    let text = err.to_string();
    for a in [dead, quiet.addr, stuck] {
        assert!(text.contains(&a.to_string()), "{text}");
    }
    assert_eq!(ctx.context_id(), 0);
    assert!(good.iter().all(|s| s.contexts().is_empty()));
    quiet.task.abort();
    drop(backlog);
    shutdown_all(good).await;
}

/// A task that answers GetStatus but refuses every context.
struct Refusing;

fn refused() -> Status {
    Status::internal("this task refuses contexts")
}

#[tonic::async_trait]
impl WorkerService for Refusing {
    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(GetStatusResponse {
            device_attributes: vec![DeviceAttributes {
                name: "/job:worker/replica:0/task:0/device:CPU:0".to_owned(),
                device_type: "CPU".to_owned(),
                memory_limit: 1 << 28,
                incarnation: 1,
                xla_global_id: -1,
                ..DeviceAttributes::default()
            }],
        }))
    }

    async fn recv_tensor(
        &self,
        _request: Request<RecvTensorRequest>,
    ) -> Result<Response<RecvTensorResponse>, Status> {
        Err(refused())
    }
}

#[tonic::async_trait]
impl EagerService for Refusing {
    async fn create_context(
        &self,
        _request: Request<CreateContextRequest>,
    ) -> Result<Response<CreateContextResponse>, Status> {
        // Let the good tasks create theirs first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(refused())
    }
    async fn update_context(
        &self,
        _request: Request<UpdateContextRequest>,
    ) -> Result<Response<UpdateContextResponse>, Status> {
        Err(refused())
    }
    async fn enqueue(
        &self,
        _request: Request<EnqueueRequest>,
    ) -> Result<Response<EnqueueResponse>, Status> {
        Err(refused())
    }
    type StreamingEnqueueStream =
        tonic::codegen::tokio_stream::Empty<Result<EnqueueResponse, Status>>;
    async fn streaming_enqueue(
        &self,
        _request: Request<Streaming<EnqueueRequest>>,
    ) -> Result<Response<Self::StreamingEnqueueStream>, Status> {
        Err(refused())
    }
    async fn wait_queue_done(
        &self,
        _request: Request<WaitQueueDoneRequest>,
    ) -> Result<Response<WaitQueueDoneResponse>, Status> {
        Err(refused())
    }
    async fn run_component_function(
        &self,
        _request: Request<RunComponentFunctionRequest>,
    ) -> Result<Response<RunComponentFunctionResponse>, Status> {
        Err(refused())
    }
    async fn keep_alive(
        &self,
        _request: Request<KeepAliveRequest>,
    ) -> Result<Response<KeepAliveResponse>, Status> {
        Err(refused())
    }
    async fn close_context(
        &self,
        _request: Request<CloseContextRequest>,
    ) -> Result<Response<CloseContextResponse>, Status> {
        Ok(Response::new(CloseContextResponse {}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_create_context_leaves_no_context_behind() {
    let (_, good) = servers(&[("worker", 3)]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bad = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let fake = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(WorkerServiceServer::new(Refusing))
            .add_service(EagerServiceServer::new(Refusing))
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    let addr = |i: usize| good[i].local_addr().to_string();
    let spec = spec_of(&[("worker", vec![addr(0), bad.to_string(), addr(1), addr(2)])]);
    let ctx = Context::new();
    let err = ctx.connect_to_cluster(spec, fast()).await.unwrap_err();
    let Error::Tasks {
        stage, failures, ..
    } = &err
    else {
        panic!("not a task failure: {err:?}");
    };
    assert_eq!(*stage, Stage::CreateContext);
    assert_eq!(failures.len(), 1, "{err}");
    assert_eq!(failures[0].task, TaskId::new("worker", 1));
    assert_eq!(failures[0].address, bad.to_string());
    assert!(
        err.to_string().contains("this task refuses contexts"),
        "{err}"
    );
    assert_eq!(ctx.context_id(), 0);
    assert_eq!(contexts(&good), [vec![], vec![], vec![]]);
    let _ = stop.send(());
    fake.await.unwrap().unwrap();
    shutdown_all(good).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_is_reported_unreachable() {
    let (spec, mut servers) = servers(&[("worker", 3)]).await;
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, fast().with_keep_alive_secs(2))
        .await
        .unwrap();
    let mut events = ctx.subscribe();
    let killed = servers.remove(1);
    let killed_addr = killed.local_addr();
    killed.shutdown().await.unwrap();

    // The keep-alive (every second) notices.
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("a health event within 5 s")
        .unwrap();
    assert_eq!(event.task, TaskId::new("worker", 1));
    assert_eq!(event.address, killed_addr.to_string());
    assert_eq!(event.context_id, ctx.context_id());
    assert!(
        matches!(event.health, TaskHealth::Unreachable { .. }),
        "{event:?}"
    );
    let health = ctx.check_alive(&TaskId::new("worker", 1)).await.unwrap();
    assert!(
        matches!(health, TaskHealth::Unreachable { .. }),
        "{health:?}"
    );
    assert_eq!(
        ctx.check_alive(&TaskId::new("worker", 0)).await.unwrap(),
        TaskHealth::Alive
    );
    assert!(matches!(
        ctx.check_alive(&TaskId::new("worker", 7)).await,
        Err(Error::UnknownTask(_))
    ));
    // The live tasks' contexts are kept alive past keep_alive_secs.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(servers.iter().all(|s| s.contexts().len() == 1));

    // Closing cannot tell the dead task, and says so; the others are closed.
    let err = ctx.close().await.unwrap_err();
    let Error::Tasks {
        stage, failures, ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*stage, Stage::Close);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].task, TaskId::new("worker", 1));
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_task_is_detected_and_its_context_recreated_on_update() {
    let (spec, mut servers) = servers(&[("worker", 3)]).await;
    let ctx = Context::new();
    ctx.connect_to_cluster(spec.clone(), fast()).await.unwrap();
    let id = ctx.context_id();
    let handle = ctx
        .device("/job:worker/replica:0/task:1/device:CPU:0")
        .unwrap();
    let old_incarnation = ctx.device_attributes(&handle).unwrap().incarnation;

    let old = servers.remove(1);
    let addr = old.local_addr();
    old.shutdown().await.unwrap();
    servers.insert(1, server_at("worker", addr).await);
    assert!(servers[1].contexts().is_empty());

    let worker1 = TaskId::new("worker", 1);
    assert_eq!(
        ctx.check_alive(&worker1).await.unwrap(),
        TaskHealth::Restarted
    );

    // The same cluster again: an update, which finds worker 1 replaced.
    ctx.connect_to_cluster(spec, fast()).await.unwrap();
    assert_eq!(ctx.context_id(), id);
    assert_eq!(ctx.context_view_id(), 1);
    assert_eq!(contexts(&servers), vec![vec![(id, 1)]; 3]);
    // The handle is still valid and now shows the new incarnation.
    let now = ctx.device_attributes(&handle).unwrap().incarnation;
    assert_ne!(now, old_incarnation);
    assert_eq!(now, servers[1].device_attributes()[0].incarnation);
    assert_eq!(ctx.check_alive(&worker1).await.unwrap(), TaskHealth::Alive);
    ctx.close().await.unwrap();
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_another_cluster_is_a_full_reset() {
    let (_, servers) = servers(&[("worker", 3)]).await;
    let addr = |i: usize| servers[i].local_addr().to_string();
    let two = spec_of(&[("worker", vec![addr(0), addr(1)])]);
    let three = spec_of(&[("worker", vec![addr(0), addr(1), addr(2)])]);
    let ctx = Context::new();
    ctx.connect_to_cluster(two, fast()).await.unwrap();
    let first = ctx.context_id();
    let handle = ctx
        .device("/job:worker/replica:0/task:0/device:CPU:0")
        .unwrap();
    assert_eq!(handle.context_id(), first);

    ctx.connect_to_cluster(three.clone(), fast()).await.unwrap();
    let second = ctx.context_id();
    assert_ne!(second, first);
    assert_eq!(ctx.context_view_id(), 0);
    // The old contexts are closed; every task has only the new one.
    assert_eq!(contexts(&servers), vec![vec![(second, 0)]; 3]);
    let err = ctx.device_attributes(&handle).unwrap_err();
    assert!(
        matches!(
            err,
            Error::StaleDevice { handle_context, current_context, .. }
                if handle_context == first && current_context == second
        ),
        "{err:?}"
    );

    // Dropping a task is a reset too.
    let one = spec_of(&[("worker", vec![addr(0)])]);
    ctx.connect_to_cluster(one, fast()).await.unwrap();
    let third = ctx.context_id();
    assert_ne!(third, second);
    assert_eq!(contexts(&servers), [vec![(third, 0)], vec![], vec![]]);
    ctx.close().await.unwrap();
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_the_same_cluster_is_an_update() {
    let (spec, servers) = servers(&[("ps", 1), ("worker", 2)]).await;
    let ctx = Context::new();
    ctx.connect_to_cluster(spec.clone(), fast()).await.unwrap();
    let id = ctx.context_id();
    let local = ctx.local_address().unwrap();
    let handle = ctx.device("/job:ps/replica:0/task:0/device:CPU:0").unwrap();

    ctx.connect_to_cluster(spec.clone(), fast()).await.unwrap();
    assert_eq!(ctx.context_id(), id);
    assert_eq!(ctx.context_view_id(), 1);
    assert_eq!(ctx.local_address().unwrap(), local);
    assert_eq!(contexts(&servers), vec![vec![(id, 1)]; 3]);
    assert_eq!(
        ctx.device_attributes(&handle).unwrap().name,
        "/job:ps/replica:0/task:0/device:CPU:0"
    );
    // The spec with our own job, as the context reports it, is another cluster to TensorFlow:
    // it compares the ClusterDef it sent (our job appended last) with the new one (jobs
    // sorted, `localhost` before `ps`) as protobufs, in order. A reset that keeps the local
    // server, as in TensorFlow.
    let full = ctx.cluster_spec().unwrap();
    assert!(full.has_job("localhost"));
    ctx.connect_to_cluster(full.clone(), fast()).await.unwrap();
    let id = ctx.context_id();
    assert_eq!(ctx.context_view_id(), 0);
    assert_eq!(ctx.local_address().unwrap(), local);
    assert_eq!(contexts(&servers), vec![vec![(id, 0)]; 3]);
    // Now the ClusterDef sent is sorted with `localhost` in place: the same spec updates.
    ctx.connect_to_cluster(full, fast()).await.unwrap();
    assert_eq!((ctx.context_id(), ctx.context_view_id()), (id, 1));
    assert_eq!(contexts(&servers), vec![vec![(id, 1)]; 3]);

    // Another cluster that names our job at the port our server holds: a reset that keeps
    // the local server (binding that port again would fail).
    let ps = servers[0].local_addr().to_string();
    let smaller = spec_of(&[("ps", vec![ps]), ("localhost", vec![local.clone()])]);
    ctx.connect_to_cluster(smaller, fast()).await.unwrap();
    assert_ne!(ctx.context_id(), id);
    assert_eq!(ctx.local_address().unwrap(), local);
    assert_eq!(contexts(&servers)[1..], [vec![], vec![]]);
    ctx.close().await.unwrap();
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolver_without_master_is_a_no_op() {
    let (spec, servers) = servers(&[("worker", 2)]).await;
    let ctx = Context::new();
    let resolver = SimpleClusterResolver::new(spec);
    ctx.connect_to_cluster(&resolver, fast()).await.unwrap();
    assert_eq!(ctx.context_id(), 0);
    assert!(ctx.list_logical_devices().is_empty());
    assert!(servers.iter().all(|s| s.contexts().is_empty()));
    ctx.close().await.unwrap();
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolvers_master_is_the_default_device() {
    let (spec, servers) = servers(&[("ps", 1), ("worker", 2)]).await;
    let ctx = Context::new();
    let nowhere = SimpleClusterResolver::new(spec.clone()).with_master("grpc://nowhere:1");
    let err = ctx.connect_to_cluster(&nowhere, fast()).await.unwrap_err();
    assert!(
        matches!(&err, Error::MasterNotFound(m) if m == "grpc://nowhere:1"),
        "{err:?}"
    );
    assert_eq!(ctx.context_id(), 0);
    assert!(servers.iter().all(|s| s.contexts().is_empty()));

    let master = format!("grpc://{}", servers[2].local_addr());
    let resolver = SimpleClusterResolver::new(spec).with_master(master);
    ctx.connect_to_cluster(&resolver, fast()).await.unwrap();
    assert_eq!(
        ctx.default_device().as_deref(),
        Some("/job:worker/replica:0/task:1/device:CPU:0")
    );
    assert!(servers.iter().all(|s| s.contexts().len() == 1));
    ctx.close().await.unwrap();
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn num_accelerators_asks_the_master() {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .unwrap();
    let gpu = LocalDevice {
        device_type: "GPU".into(),
        id: 0,
        memory_limit: 1 << 30,
        physical_device_desc: "device: 0, name: Test GPU, pci bus id: 0000:00:04.0".into(),
        bus_id: 1,
    };
    let s = TaskServer::builder(placeholder, "worker", 0)
        .with_devices(vec![LocalDevice::cpu(), gpu])
        .with_bind("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let spec = spec_of(&[("worker", vec![s.local_addr().to_string()])]);
    let resolver =
        SimpleClusterResolver::new(spec).with_master(format!("grpc://{}", s.local_addr()));
    let counts = remote_connect::num_accelerators(&resolver, None, None, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(counts, [("GPU".to_owned(), 1)].into());
    // With a task: its address is dialled, and names are filtered by job and task.
    let counts = remote_connect::num_accelerators(
        &resolver,
        Some("worker"),
        Some(0),
        Duration::from_secs(2),
    )
    .await
    .unwrap();
    assert_eq!(counts, [("GPU".to_owned(), 1)].into());

    let dead = SimpleClusterResolver::new(spec_of(&[("worker", vec!["x:1".to_owned()])]))
        .with_master(format!("grpc://{}", dead_addr()));
    let err = remote_connect::num_accelerators(&dead, None, None, Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tasks { .. }), "{err:?}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_reported_per_task_and_stage() {
    let (spec, servers) = servers(&[("worker", 3)]).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = fast().with_progress(move |stage, done, total| {
        log.lock().unwrap().push((stage, done, total));
    });
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, options).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let discovery: Vec<usize> = seen
        .iter()
        .filter(|(s, _, _)| *s == remote_connect::Stage::Discovery)
        .map(|(_, done, total)| {
            assert_eq!(*total, 3);
            *done
        })
        .collect();
    assert_eq!(discovery, [1, 2, 3]);
    assert_eq!(
        seen.last(),
        Some(&(remote_connect::Stage::CreateContext, 3, 3))
    );
    ctx.close().await.unwrap();
    shutdown_all(servers).await;
}
