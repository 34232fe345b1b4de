//! `Context::connect_to_cluster` against 16, 64, 256 and 1,024 in-process `TaskServer`s on
//! loopback: device discovery (one dial and `GetStatus` per task), then one `CreateContext`
//! per task. Only the connect is timed; the `close()` after each one is not.
//!
//! - `no_filters`: every task is sent every device of the cluster (n + 1 of them), so the
//!   bytes sent grow as n²;
//! - `ps_filters`: ParameterServerStrategy's filters with 1/8 of the tasks `ps`, the rest
//!   `worker`: a worker is sent the ps and itself, a ps the workers and itself;
//! - `bare_tonic_floor`: what the transport alone costs for a connect's shape: a fresh tonic
//!   channel and two small RPCs (`GetStatus` twice) to every task, concurrently, nothing else.
//!   A real connect's second RPC is a `CreateContext` carrying the cluster and its devices.
//!
//! `follow/add_one_to_64`: a [`Context::follow`] connected to 64 tasks is told of a 65th; timed
//! from the spec sent to the change published (the context serving the new task). Each task
//! removed again, untimed; `follow/reconnect_65` is what a client that reconnects on every
//! change would pay instead, in the same run. TensorFlow's update path: `CreateContext` on the new task alone,
//! `KeepAlive` and `UpdateContext` on the 64 others (checked once before timing).
//!
//! With the `tls` feature, `connect_mtls` times the same connect to 16 tasks in plaintext and
//! with TLS client certificates (a TLS 1.3 handshake per task, ECDSA P-256 certificates from a
//! test CA), in the same run:
//! `cargo bench -p remote-connect --features tls --bench connect -- connect_mtls`.
//!
//! Client and servers share one tokio runtime of 2 worker threads (the machine's cores), so
//! the numbers include the servers' work.

// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use cluster_proto::GetStatusRequest;
use cluster_proto::worker_service_client::WorkerServiceClient;
use cluster_spec::ClusterSpec;
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use device_filter::ClusterDeviceFilters;
use remote_connect::{
    ConnectOptions, Context, FollowEvent, FollowOptions, LocalDevice, RunningServer, TaskServer,
    TaskServerBuilder,
};
use tokio::runtime::Runtime;
use tokio::sync::{broadcast, mpsc};
use tonic::transport::Endpoint;

const SIZES: [usize; 4] = [16, 64, 256, 1024];

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// `n` CPU-only servers on free loopback ports.
async fn start(n: usize) -> Vec<RunningServer> {
    start_with(n, |builder| builder).await
}

/// [`start`] with each builder passed through `configure` first.
async fn start_with(
    n: usize,
    configure: impl Fn(TaskServerBuilder) -> TaskServerBuilder,
) -> Vec<RunningServer> {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .expect("a placeholder spec");
    let mut servers = Vec::with_capacity(n);
    for _ in 0..n {
        let server = configure(TaskServer::builder(placeholder.clone(), "worker", 0))
            .with_devices(vec![LocalDevice::cpu()])
            .with_bind("127.0.0.1:0".parse().expect("an address"))
            .start()
            .await
            .expect("a TaskServer starts");
        servers.push(server);
    }
    servers
}

/// The first `n` servers as a cluster of `n / 8` ps tasks and `n - n / 8` workers.
fn spec(servers: &[RunningServer], n: usize) -> ClusterSpec {
    let addresses: Vec<String> = servers[..n]
        .iter()
        .map(|s| s.local_addr().to_string())
        .collect();
    let (ps, workers) = addresses.split_at(n / 8);
    ClusterSpec::builder()
        .job("ps", ps.iter().cloned())
        .job("worker", workers.iter().cloned())
        .build()
        .expect("a valid spec")
}

fn options(filters: Option<ClusterDeviceFilters>) -> ConnectOptions {
    let options = ConnectOptions::default()
        .with_rpc_timeout(Duration::from_secs(60))
        .with_timeout(Duration::from_secs(120));
    match filters {
        Some(filters) => options.with_cluster_device_filters(filters),
        None => options,
    }
}

/// Connects `iters` times, timing only the connects.
async fn connect_many(spec: &ClusterSpec, options: &ConnectOptions, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let ctx = Context::new();
        let start = Instant::now();
        ctx.connect_to_cluster(spec.clone(), options.clone())
            .await
            .expect("the connect succeeds");
        total += start.elapsed();
        ctx.close().await.expect("the close succeeds");
    }
    total
}

/// A fresh channel and two GetStatus calls to every server, concurrently, `iters` times.
async fn bare_many(servers: &[RunningServer], n: usize, iters: u64) -> Duration {
    let endpoints: Vec<Endpoint> = servers[..n]
        .iter()
        .map(|s| {
            Endpoint::from_shared(format!("http://{}", s.local_addr()))
                .expect("an endpoint")
                .tcp_nodelay(true)
        })
        .collect();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for endpoint in &endpoints {
            let endpoint = endpoint.clone();
            set.spawn(async move {
                let channel = endpoint.connect().await.expect("a connection");
                let mut client = WorkerServiceClient::new(channel);
                let mut devices = 0;
                for _ in 0..2 {
                    devices = client
                        .get_status(GetStatusRequest {})
                        .await
                        .expect("GetStatus answers")
                        .into_inner()
                        .device_attributes
                        .len();
                }
                devices
            });
        }
        while let Some(devices) = set.join_next().await {
            assert_eq!(devices.expect("the task finished"), 1);
        }
        total += start.elapsed();
    }
    total
}

fn connect(c: &mut Criterion) {
    // Each task is a listener, a client socket and an accepted socket: ~3,100 descriptors at
    // 1,024 tasks, past the usual soft limit of 1,024.
    let limit = rlimit::increase_nofile_limit(u64::MAX).expect("the open-file limit rises");
    assert!(
        limit >= 4096,
        "open-file limit {limit} is too low for 1,024 tasks"
    );
    let rt = runtime();
    let servers = rt.block_on(start(SIZES[SIZES.len() - 1]));

    // Check once per size that the connect does what is measured.
    for n in SIZES {
        let spec = spec(&servers, n);
        let filters = ClusterDeviceFilters::parameter_server(&spec);
        rt.block_on(async {
            let ctx = Context::new();
            ctx.connect_to_cluster(spec.clone(), options(Some(filters)))
                .await
                .expect("the connect succeeds");
            assert_eq!(ctx.list_logical_devices().len(), n + 1);
            let id = ctx.context_id();
            assert!(servers[..n].iter().all(|s| s.contexts()[0].id == id));
            // A worker is sent the n/8 ps and itself.
            assert_eq!(servers[n - 1].contexts()[0].devices.len(), n / 8 + 1);
            ctx.close().await.expect("the close succeeds");
            assert!(servers[..n].iter().all(|s| s.contexts().is_empty()));
        });
    }

    let mut g = c.benchmark_group("connect");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let spec = spec(&servers, n);
        let filters = ClusterDeviceFilters::parameter_server(&spec);
        g.throughput(Throughput::Elements(n as u64));
        let plain = options(None);
        g.bench_with_input(BenchmarkId::new("no_filters", n), &n, |b, _| {
            b.to_async(&rt)
                .iter_custom(|iters| connect_many(&spec, &plain, iters));
        });
        let filtered = options(Some(filters));
        g.bench_with_input(BenchmarkId::new("ps_filters", n), &n, |b, _| {
            b.to_async(&rt)
                .iter_custom(|iters| connect_many(&spec, &filtered, iters));
        });
        g.bench_with_input(BenchmarkId::new("bare_tonic_floor", n), &n, |b, &n| {
            b.to_async(&rt)
                .iter_custom(|iters| bare_many(&servers, n, iters));
        });
    }
    g.finish();
    rt.block_on(async {
        for server in servers {
            server.shutdown().await.expect("the server stops");
        }
    });
}

/// The first `n` servers as job `worker`.
fn workers(servers: &[RunningServer], n: usize) -> ClusterSpec {
    ClusterSpec::builder()
        .job(
            "worker",
            servers[..n].iter().map(|s| s.local_addr().to_string()),
        )
        .build()
        .expect("a valid spec")
}

/// The next change a follower publishes.
async fn changed(events: &mut broadcast::Receiver<FollowEvent>) -> remote_connect::ClusterChange {
    match events.recv().await.expect("the follower runs") {
        FollowEvent::Changed(change) => change,
        other => panic!("the change failed: {other:?}"),
    }
}

fn follow(c: &mut Criterion) {
    const N: usize = 64;
    let rt = runtime();
    let servers = rt.block_on(start(N + 1));
    let (small, large) = (workers(&servers, N), workers(&servers, N + 1));
    let (tx, rx) = mpsc::unbounded_channel::<Result<ClusterSpec, std::io::Error>>();
    let changes = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let ctx = Context::new();
    let (follower, events) = rt.block_on(async {
        let follower = ctx.follow(changes, FollowOptions::new(options(None)));
        let mut events = follower.subscribe();
        tx.send(Ok(small.clone())).expect("the follower listens");
        assert_eq!(changed(&mut events).await.added.len(), N);
        // The update path on the wire: a context created on the new task alone, the others
        // moved to the next view.
        tx.send(Ok(large.clone())).expect("the follower listens");
        let change = changed(&mut events).await;
        assert_eq!((change.added.len(), change.reset), (1, false));
        assert!(servers[..N].iter().all(|s| s.contexts()[0].view_id == 1));
        assert_eq!(servers[N].contexts()[0].view_id, 1);
        tx.send(Ok(small.clone())).expect("the follower listens");
        changed(&mut events).await;
        (
            follower,
            std::sync::Arc::new(tokio::sync::Mutex::new(events)),
        )
    });

    let mut g = c.benchmark_group("follow");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("add_one_to_64", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (tx, events) = (tx.clone(), events.clone());
            let (small, large) = (small.clone(), large.clone());
            async move {
                let mut events = events.lock().await;
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    tx.send(Ok(large.clone())).expect("the follower listens");
                    changed(&mut events).await;
                    total += start.elapsed();
                    tx.send(Ok(small.clone())).expect("the follower listens");
                    changed(&mut events).await;
                }
                total
            }
        });
    });
    // What following by reconnecting would cost: a new context on all 65.
    let plain = options(None);
    g.bench_function("reconnect_65", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| connect_many(&large, &plain, iters));
    });
    g.finish();
    rt.block_on(async {
        follower.stop().await;
        ctx.close().await.expect("the close succeeds");
        for server in servers {
            server.shutdown().await.expect("the server stops");
        }
    });
}

/// 16 tasks, plaintext and mTLS, in the same run.
#[cfg(feature = "tls")]
fn connect_mtls(c: &mut Criterion) {
    use remote_connect::{Access, TlsConfig};
    let ca = tf_oracle::TestCa::new("bench CA");
    let config = |names: &[&str]| {
        let issued = ca.issue(names);
        TlsConfig::from_pem(issued.cert, issued.key, ca.cert_pem()).expect("a TLS config")
    };
    let (server_tls, client_tls) = (config(&["127.0.0.1"]), config(&["client"]));
    let rt = runtime();
    let plain = rt.block_on(start(16));
    let secured = rt.block_on(start_with(16, |b| {
        b.with_access(Access::default().with_tls(server_tls.clone()))
    }));
    let (plain_spec, secured_spec) = (spec(&plain, 16), spec(&secured, 16));
    let (plain_options, secured_options) = (options(None), options(None).with_tls(client_tls));
    let mut g = c.benchmark_group("connect_mtls");
    g.bench_function("plaintext_16", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| connect_many(&plain_spec, &plain_options, iters));
    });
    g.bench_function("mtls_16", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| connect_many(&secured_spec, &secured_options, iters));
    });
    g.finish();
}

#[cfg(feature = "tls")]
criterion_group!(benches, connect, follow, connect_mtls);
#[cfg(not(feature = "tls"))]
criterion_group!(benches, connect, follow);
criterion_main!(benches);
