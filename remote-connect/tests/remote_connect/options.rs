//! The `ConnectOptions` settings the other tests leave at their defaults: the local task's
//! index and bind address, the RPCs in flight, the protocol.

use std::net::{SocketAddr, TcpListener};

use cluster_spec::ClusterSpec;
use remote_connect::{ConnectOptions, Context, Error};

use crate::cluster::{fast, server, shutdown_all};

/// A loopback port free now (the OS picks it; it is released at once).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_task_is_the_index_given_one_rpc_at_a_time() {
    let w0 = server("worker").await;
    let local = format!("127.0.0.1:{}", free_port());
    let spec = ClusterSpec::builder()
        .job("worker", [w0.local_addr().to_string(), local.clone()])
        .build()
        .unwrap();
    let ctx = Context::new();
    ctx.connect_to_cluster(
        spec,
        fast()
            .with_job_name("worker")
            .with_task_index(1)
            .with_max_in_flight(1),
    )
    .await
    .unwrap();
    assert_eq!(ctx.local_address(), Some(local));
    let devices: Vec<String> = ctx
        .list_logical_devices()
        .into_iter()
        .map(|d| d.name)
        .collect();
    // The remote task reached; this process's own devices are listed unqualified, as in TF.
    let remote = "/job:worker/replica:0/task:0/device:CPU:0".to_owned();
    assert!(
        devices.contains(&remote),
        "{remote} missing from {devices:?}"
    );
    ctx.close().await.unwrap();
    shutdown_all(vec![w0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_local_job_listens_where_it_is_bound() {
    let w0 = server("worker").await;
    let spec = ClusterSpec::builder()
        .job("worker", [w0.local_addr().to_string()])
        .build()
        .unwrap();
    let port = free_port();
    let bind = SocketAddr::from(([127, 0, 0, 1], port));
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, fast().with_local_bind(bind))
        .await
        .unwrap();
    // Without a bind the added job takes a port the OS picks.
    assert_eq!(ctx.local_address(), Some(format!("localhost:{port}")));
    ctx.close().await.unwrap();
    shutdown_all(vec![w0]).await;
}

#[tokio::test]
async fn a_protocol_other_than_grpc_is_refused_by_name() {
    let spec = ClusterSpec::builder()
        .job("worker", ["127.0.0.1:1"])
        .build()
        .unwrap();
    let err = Context::new()
        .connect_to_cluster(spec, ConnectOptions::default().with_protocol("rdma"))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Protocol(p) if p == "rdma"), "{err:?}");
}
