//! `TaskServerBuilder::allow`: peers outside the allowed networks are cut off at accept time.

use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use remote_connect::{ConnectOptions, Context, Error, Network, RunningServer, Stage, TaskServer};

async fn allowing(networks: &[&str]) -> RunningServer {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .unwrap();
    TaskServer::builder(placeholder, "worker", 0)
        .bind("127.0.0.1:0".parse().unwrap())
        .allow(networks.iter().map(|n| n.parse::<Network>().unwrap()))
        .start()
        .await
        .unwrap()
}

fn fast() -> ConnectOptions {
    ConnectOptions::default()
        .rpc_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_outside_the_allowed_networks_is_refused_at_once() {
    // 192.0.2.1 is reserved for documentation: never this test's own address.
    let s = allowing(&["192.0.2.1", "2001:db8::/32"]).await;
    let spec = ClusterSpec::builder()
        .job("worker", [s.local_addr().to_string()])
        .build()
        .unwrap();
    let start = Instant::now();
    let err = Context::new()
        .connect_to_cluster(spec, fast())
        .await
        .unwrap_err();
    // Closed at accept: no waiting for a deadline.
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "took {:?}",
        start.elapsed()
    );
    let Error::Tasks {
        stage: Stage::Discovery,
        failures,
        ..
    } = &err
    else {
        panic!("not a discovery failure: {err:?}");
    };
    assert_eq!(failures.len(), 1);
    let text = failures[0].to_string();
    assert!(
        text.starts_with(&format!(
            "/job:worker/replica:0/task:0 at {}",
            s.local_addr()
        )),
        "{text}"
    );
    assert!(s.contexts().is_empty());
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_inside_the_allowed_networks_is_served() {
    let s = allowing(&["192.0.2.0/24", "127.0.0.0/8"]).await;
    let spec = ClusterSpec::builder()
        .job("worker", [s.local_addr().to_string()])
        .build()
        .unwrap();
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, fast()).await.unwrap();
    assert_eq!(s.contexts().len(), 1);
    ctx.close().await.unwrap();
    s.shutdown().await.unwrap();
}
