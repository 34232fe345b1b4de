//! `TaskServerMetrics`: the contexts gauge follows creates, closes and idle collection, a
//! refusal by the contexts cap counts once under its limit, and the connections gauge sees
//! the client; read from the registry's exposition, as Prometheus would.

use std::time::{Duration, Instant};

use cluster_proto::eager::{CloseContextRequest, CreateContextRequest};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use remote_connect::{Limits, TaskServer, TaskServerMetrics};
use tonic::Code;

use crate::cluster::{eager, placeholder};

/// The value of the sample `name` (with its labels, as exposed) in `registry`'s exposition.
fn sample(registry: &Registry, name: &str) -> Option<f64> {
    let mut text = String::new();
    encode(&mut text, registry).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contexts_gauge_follows_creates_closes_and_collection_and_refusals_count_by_limit() {
    let metrics = TaskServerMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let limits = Limits::default()
        .with_max_contexts(1)
        .with_context_idle_limit(Some(Duration::from_millis(200)));
    let s = TaskServer::builder(placeholder("worker"), "worker", 0)
        .with_bind("127.0.0.1:0".parse().unwrap())
        .with_gc_interval(Duration::from_millis(20))
        .with_limits(limits)
        .with_metrics(metrics.clone())
        .start()
        .await
        .unwrap();
    assert_eq!(
        sample(&registry, "tfcluster_taskserver_contexts"),
        Some(0.0)
    );
    assert_eq!(
        sample(&registry, "tfcluster_taskserver_connections"),
        Some(0.0)
    );
    let mut client = eager(s.local_addr()).await;
    let create = |id, keep_alive_secs| CreateContextRequest {
        context_id: id,
        keep_alive_secs,
        ..CreateContextRequest::default()
    };
    client.create_context(create(1, 600)).await.unwrap();
    assert_eq!(
        sample(&registry, "tfcluster_taskserver_contexts"),
        Some(1.0)
    );
    assert_eq!(
        sample(&registry, "tfcluster_taskserver_connections"),
        Some(1.0)
    );

    // The table is full of contexts with a keep-alive: refused, counted once by its limit.
    let err = client.create_context(create(2, 600)).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    assert_eq!(metrics.refusals("max_contexts"), 1);
    assert_eq!(
        sample(
            &registry,
            r#"tfcluster_taskserver_refusals_total{limit="max_contexts"}"#
        ),
        Some(1.0)
    );
    assert_eq!(metrics.contexts(), 1);

    client
        .close_context(CloseContextRequest {
            context_id: 1,
            context_view_id: 0,
        })
        .await
        .unwrap();
    assert_eq!(
        sample(&registry, "tfcluster_taskserver_contexts"),
        Some(0.0)
    );

    // Without keep-alive, collected past the idle limit: the gauge goes down on its own.
    client.create_context(create(3, 0)).await.unwrap();
    assert_eq!(metrics.contexts(), 1);
    let start = Instant::now();
    while metrics.contexts() != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the idle context is not collected"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(s.contexts().is_empty());
    s.shutdown().await.unwrap();
}
