//! Interop with real TensorFlow 2.21 on loopback, both directions:
//!
//! 1. our [`Context`] against real `tf.distribute.Server`s: the devices TensorFlow's own client
//!    lists, filtered contexts, keep-alive against TensorFlow's context GC, update, full reset
//!    and close;
//! 2. TensorFlow's `experimental_connect_to_cluster` against our [`TaskServer`]s, alone and
//!    mixed with a real TensorFlow worker: listing, an op on our device failing fast with
//!    `UnimplementedError`, TensorFlow's update and reset paths;
//! 3. device filters, differential: for a sequence of clusters and filter sets, the device
//!    lists our servers receive from TensorFlow's client equal those they receive from ours;
//! 4. following a cluster file of real TensorFlow workers (`follow`): added, removed, reset;
//! 5. ops run from Rust on real TensorFlow workers (`ops`): values, remote chains, errors,
//!    device filters enforced by the workers, results equal to Python's, latency figures;
//! 6. functions traced in Python run from Rust on them (`functions`): results equal to
//!    Python's, inputs kept on workers, device filters, errors, one registration per
//!    context (counted on the wire by `counting_proxy`), latency beside Python's.

use std::collections::BTreeSet;
use std::time::Duration;

use cluster_proto::eager::KeepAliveRequest;
use cluster_proto::eager::eager_service_client::EagerServiceClient;
use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;
use remote_connect::{ConnectOptions, Context, RunningServer, TaskHealth, TaskId};
use tf_oracle::{Process, STARTUP};

use crate::cluster::server;

#[path = "interop/counting_proxy.rs"]
mod counting_proxy;
#[path = "interop/follow.rs"]
mod follow;
#[path = "interop/functions.rs"]
mod functions;
#[path = "interop/ops.rs"]
mod ops;

/// Real TensorFlow servers for `jobs` (name, task count); returns their process (killed when
/// dropped) and the cluster.
fn tf_cluster(jobs: &[(&str, usize)]) -> (Process, ClusterSpec) {
    let (process, cluster) = blocking(|| tf_oracle::tf_servers(jobs));
    (process, ClusterSpec::from_json(&cluster).unwrap())
}

/// `n` real TensorFlow servers of job `job`; returns their process and addresses.
fn tf_servers(job: &str, n: usize) -> (Process, Vec<String>) {
    let (process, spec) = tf_cluster(&[(job, n)]);
    let addresses = (0..n as u32)
        .map(|i| spec.task_address(job, i).unwrap().to_owned())
        .collect();
    (process, addresses)
}

/// Runs a blocking step (reading a Python script's output) without stalling the runtime.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// TensorFlow's own client: connect, list devices.
const TF_LIST: &str = r#"
import json, sys
import tensorflow as tf
tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec(json.loads(sys.argv[1])))
print("DEVICES", json.dumps([[d.name, d.device_type] for d in tf.config.list_logical_devices()]), flush=True)
"#;

async fn keep_alive_status(address: &str, context_id: u64) -> Result<u64, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = EagerServiceClient::new(channel);
    client
        .keep_alive(KeepAliveRequest { context_id })
        .await
        .map(|r| r.into_inner().context_view_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_context_against_tensorflow_servers() {
    let (mut tf, addresses) = blocking(|| tf_servers("worker", 2));
    let spec = ClusterSpec::builder()
        .job("worker", &addresses)
        .build()
        .unwrap();

    // What TensorFlow's own client lists for the cluster.
    let mut lister = Process::spawn(TF_LIST, &[&spec.to_json()]);
    let listed = blocking(|| lister.expect("DEVICES", STARTUP));
    let listed: Vec<(String, String)> = serde_json::from_str(&listed).unwrap();
    let tf_remote: BTreeSet<(String, String)> = listed
        .into_iter()
        .filter(|(name, _)| name.starts_with("/job:"))
        .collect();

    // The filters observed on the wire in tf-wire.md §5.
    let mut filters = ClusterDeviceFilters::default();
    filters
        .set_device_filters("worker", 0, ["/job:worker/task:1"])
        .unwrap();
    filters
        .set_device_filters("worker", 1, ["/job:nonexistent"])
        .unwrap();
    let options = ConnectOptions::default()
        .with_cluster_device_filters(filters)
        .with_keep_alive_secs(4)
        .with_rpc_timeout(Duration::from_secs(10));
    let ctx = Context::new();
    ctx.connect_to_cluster(spec.clone(), options.clone())
        .await
        .unwrap();
    let ours: BTreeSet<(String, String)> = ctx
        .list_logical_devices()
        .into_iter()
        .filter(|d| d.name.starts_with("/job:"))
        .map(|d| (d.name, d.device_type))
        .collect();
    assert_eq!(
        ours, tf_remote,
        "discovered devices differ from TensorFlow's"
    );
    let w0 = TaskId::new("worker", 0);
    let w1 = TaskId::new("worker", 1);
    assert_eq!(
        ctx.visible_devices(&w0).unwrap(),
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:1/device:CPU:0"
        ]
    );
    assert_eq!(
        ctx.visible_devices(&w1).unwrap(),
        ["/job:worker/replica:0/task:1/device:CPU:0"]
    );
    let first = ctx.context_id();
    let handle = ctx
        .device("/job:worker/replica:0/task:1/device:CPU:0")
        .unwrap();

    // TensorFlow's workers collect a context after 4 s without requests: keep-alives (every
    // 2 s) keep ours.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(ctx.check_alive(&w0).await.unwrap(), TaskHealth::Alive);
    assert_eq!(keep_alive_status(&addresses[1], first).await.unwrap(), 0);

    // Unchanged cluster: an update, which real workers accept (view 1), handles stay valid.
    ctx.connect_to_cluster(spec.clone(), options.clone())
        .await
        .unwrap();
    assert_eq!((ctx.context_id(), ctx.context_view_id()), (first, 1));
    assert_eq!(keep_alive_status(&addresses[0], first).await.unwrap(), 1);
    assert_eq!(ctx.check_alive(&w1).await.unwrap(), TaskHealth::Alive);
    ctx.device_attributes(&handle).unwrap();

    // Another local job: a full reset; TensorFlow's workers drop the old context.
    ctx.connect_to_cluster(spec.clone(), options.clone().with_job_name("client"))
        .await
        .unwrap();
    let second = ctx.context_id();
    assert_ne!(second, first);
    let gone = keep_alive_status(&addresses[0], first).await.unwrap_err();
    assert_eq!(gone.code(), tonic::Code::Aborted);
    assert_eq!(
        gone.message(),
        format!(
            "Unable to find a context_id matching the specified one ({first}). Perhaps the worker was restarted, or the context was GC'd?"
        )
    );
    assert!(matches!(
        ctx.device_attributes(&handle),
        Err(remote_connect::Error::StaleDevice { .. })
    ));
    assert_eq!(keep_alive_status(&addresses[1], second).await.unwrap(), 0);

    ctx.close().await.unwrap();
    for address in &addresses {
        let closed = keep_alive_status(address, second).await.unwrap_err();
        assert_eq!(closed.code(), tonic::Code::Aborted);
    }
    blocking(|| tf.send(""));
}

/// TensorFlow's client, stepping through connect, an op on a Rust device, update and reset,
/// waiting for the test between steps.
const TF_CLIENT_STEPS: &str = r#"
import json, sys
import tensorflow as tf
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
def devices():
    print("DEVICES", json.dumps([d.name for d in tf.config.list_logical_devices()]), flush=True)
tf.config.experimental_connect_to_cluster(cluster)
devices()
try:
    with tf.device("/job:rust/replica:0/task:0/device:CPU:0"):
        y = tf.constant([1.0, 2.0]) + 1.0
    y.numpy()
    print("OP ok", flush=True)
except Exception as e:
    print("OP", type(e).__name__, flush=True)
print("STEP connected", flush=True); sys.stdin.readline()
tf.config.experimental_connect_to_cluster(cluster)
devices()
print("STEP updated", flush=True); sys.stdin.readline()
tf.config.experimental_connect_to_cluster(cluster, job_name="client2")
devices()
print("STEP reset", flush=True); sys.stdin.readline()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tensorflow_client_against_rust_servers() {
    let rust = [server("rust").await, server("rust").await];
    let (mut tf_worker, worker) = blocking(|| tf_servers("worker", 1));
    let spec = ClusterSpec::builder()
        .job("rust", rust.iter().map(|s| s.local_addr().to_string()))
        .job("worker", &worker)
        .build()
        .unwrap();
    let mut client = Process::spawn(TF_CLIENT_STEPS, &[&spec.to_json()]);

    let listed: Vec<String> =
        serde_json::from_str(&blocking(|| client.expect("DEVICES", STARTUP))).unwrap();
    for name in [
        "/device:CPU:0",
        "/job:rust/replica:0/task:0/device:CPU:0",
        "/job:rust/replica:0/task:1/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
    ] {
        assert!(listed.iter().any(|n| n == name), "{name} not in {listed:?}");
    }
    let op = blocking(|| client.expect("OP", Duration::from_secs(30)));
    assert_eq!(op, "UnimplementedError");
    blocking(|| client.expect("STEP connected", Duration::from_secs(30)));
    let id = one_context(&rust[0], 0);
    assert_eq!(one_context(&rust[1], 0), id);
    assert_eq!(rust[1].contexts()[0].job, "rust");
    assert_eq!(rust[1].contexts()[0].task, 1);

    blocking(|| client.send(""));
    blocking(|| client.expect("STEP updated", Duration::from_secs(60)));
    assert_eq!(
        one_context(&rust[0], 1),
        id,
        "an unchanged connect updates in place"
    );
    assert_eq!(one_context(&rust[1], 1), id);

    blocking(|| client.send(""));
    blocking(|| client.expect("STEP reset", Duration::from_secs(60)));
    let new_id = one_context(&rust[0], 0);
    assert_ne!(
        new_id, id,
        "another local job resets: old context closed, new one made"
    );
    assert!(
        rust[0].contexts()[0]
            .devices
            .iter()
            .any(|d| d == "/job:client2/replica:0/task:0/device:CPU:0")
    );
    blocking(|| client.send(""));
    blocking(|| tf_worker.send(""));
}

/// The only context of `server`, at view `view`; returns its id.
fn one_context(server: &RunningServer, view: u64) -> u64 {
    let contexts = server.contexts();
    assert_eq!(contexts.len(), 1, "{contexts:?}");
    assert_eq!(contexts[0].view_id, view, "{contexts:?}");
    contexts[0].id
}

/// TensorFlow's client connecting to a sequence of clusters with filters, one per line of
/// stdin, waiting for the test after each.
const TF_FILTER_CASES: &str = r#"
import json, sys
import tensorflow as tf
for line in sys.stdin:
    case = json.loads(line)
    f = None
    if case["filters"] is not None:
        f = tf.config.experimental.ClusterDeviceFilters()
        for job, tasks in case["filters"].items():
            for task, filters in tasks.items():
                f.set_device_filters(job, int(task), filters)
    tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec(case["cluster"]), cluster_device_filters=f)
    tf.config.list_logical_devices()
    print("CONNECTED", flush=True)
"#;

/// `(jobs, filters JSON or null)`: clusters of our servers and the filters for them, in the
/// order both clients connect (filters accumulate across full connects, as TensorFlow's do).
const FILTER_CASES: &[(&[(&str, usize)], &str)] = &[
    (
        &[("chief", 1), ("worker", 2), ("ps", 2)],
        r#"{"worker": {"0": ["/job:ps", "/job:chief"], "1": ["/job:ps", "/job:chief"]},
            "ps": {"0": ["/job:worker", "/job:chief"], "1": ["/job:worker", "/job:chief"]}}"#,
    ),
    (
        &[("worker", 2)],
        r#"{"worker": {"0": ["/job:worker/task:1"], "1": ["/job:nonexistent"]}}"#,
    ),
    (
        &[("worker", 3), ("ps", 1)],
        r#"{"ps": {"0": ["/job:worker/replica:0/task:2", "/job:localhost"]}}"#,
    ),
    (&[("worker", 2), ("evaluator", 1)], "null"),
    (
        &[("a", 1), ("b", 2)],
        r#"{"a": {"0": ["/job:b/device:CPU:*"]}, "b": {"0": ["/job:localhost"], "1": ["/device:CPU:0/job:a"]}}"#,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_match_tensorflow_client() {
    let mut cases = Vec::new();
    for (jobs, filters) in FILTER_CASES {
        let (spec, servers) = crate::cluster::servers(jobs).await;
        cases.push((spec, servers, *filters));
    }

    let mut tf = Process::spawn(TF_FILTER_CASES, &[]);
    let mut from_tf = Vec::new();
    for (i, (spec, servers, filters)) in cases.iter().enumerate() {
        let line = format!(
            r#"{{"cluster": {}, "filters": {}}}"#,
            spec.to_json(),
            filters.replace('\n', " ")
        );
        blocking(|| tf.send(&line));
        let timeout = if i == 0 {
            STARTUP
        } else {
            Duration::from_secs(60)
        };
        blocking(|| tf.expect("CONNECTED", timeout));
        from_tf.push(received(servers, None));
    }
    drop(tf);

    let ctx = Context::new();
    for (i, (spec, servers, filters)) in cases.iter().enumerate() {
        let mut options = ConnectOptions::default();
        if *filters != "null" {
            let parsed: ClusterDeviceFilters = serde_json::from_str(filters).unwrap();
            options = options.with_cluster_device_filters(parsed);
        }
        ctx.connect_to_cluster(spec.clone(), options).await.unwrap();
        let ours = received(servers, Some(ctx.context_id()));
        assert_eq!(ours, from_tf[i], "case {i}: {spec} with filters {filters}");
    }
    ctx.close().await.unwrap();
}

/// For each server, the devices its newest context (or context `id`) received.
fn received(servers: &[RunningServer], id: Option<u64>) -> Vec<BTreeSet<String>> {
    servers
        .iter()
        .map(|s| {
            let contexts = s.contexts();
            let context = match id {
                Some(id) => contexts.iter().find(|c| c.id == id),
                // TensorFlow's client leaves at most one context per server alive: a full
                // connect closes the previous one.
                None => contexts.last(),
            }
            .unwrap_or_else(|| panic!("no context on {}: {contexts:?}", s.local_addr()));
            context.devices.iter().cloned().collect()
        })
        .collect()
}
