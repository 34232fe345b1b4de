//! `KubernetesClusterResolver::watch` against the loopback API server: a PodList answers the
//! watcher's listing, then a chunked `?watch=true` stream carries the pod events the test
//! sends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cluster_resolver::WatchClusterResolver;
use cluster_resolver::kubernetes::KubernetesClusterResolver;
use cluster_resolver::watch::{ClusterStream, WatchOptions};
use cluster_spec::__private::error_chain::Chain;
use cluster_spec::ClusterSpec;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::broadcast;

use super::client;
use http_standin::kubernetes::{self, event};
use http_standin::{HttpServer, Request, Response};

const PROMPT: Duration = Duration::from_secs(10);

/// A pod of job `worker` (label `app=w`), with its phase and pod IP.
fn pod(name: &str, phase: &str, ip: Option<&str>, version: u32) -> Value {
    kubernetes::pod(name, "training", &[("app", "w")], phase, ip, version)
}

/// A loopback API server whose `app=w` listing is `pods` and whose `app=w` watches carry what
/// is sent on the returned sender; any other selector lists and hears nothing. `fail_first` listings
/// answer 403 first.
async fn api_server(
    pods: Vec<Value>,
    fail_first: usize,
) -> (HttpServer, broadcast::Sender<String>) {
    let (events, _) = broadcast::channel(1024);
    let lines = events.clone();
    // Other selectors' watches: open, and quiet.
    let (quiet, _) = broadcast::channel(1);
    let failures = AtomicUsize::new(0);
    let server = HttpServer::start(move |request: &Request| {
        if request.query("watch") == Some("true") {
            return match request.query("labelSelector") {
                Some("app=w") => Response::lines(&lines),
                _ => Response::lines(&quiet),
            };
        }
        if failures.fetch_add(1, Ordering::SeqCst) < fail_first {
            return Response::status(403, super::FORBIDDEN);
        }
        let items = match request.query("labelSelector") {
            Some("app=w") => pods.clone(),
            _ => Vec::new(),
        };
        Response::json(kubernetes::pod_list(items, 100))
    })
    .await;
    (server, events)
}

/// Waits until the server has seen `n` watch requests, so events sent now reach a watcher.
async fn watching(server: &HttpServer, n: usize) {
    let deadline = Instant::now() + PROMPT;
    while server
        .requests()
        .iter()
        .filter(|r| r.query("watch") == Some("true"))
        .count()
        < n
    {
        assert!(Instant::now() < deadline, "no watch request came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn resolver(server: &HttpServer) -> Arc<KubernetesClusterResolver> {
    Arc::new(
        KubernetesClusterResolver::new()
            .with_job("worker", ["app=w"])
            .with_job("ps", ["app=ps"])
            .with_port(2222)
            .with_client(client(server, "training")),
    )
}

fn options() -> WatchOptions {
    WatchOptions::default()
        .with_coalesce(Duration::from_millis(100))
        .with_backoff(Duration::from_millis(10), Duration::from_millis(50))
}

async fn next(changes: &mut ClusterStream) -> Result<ClusterSpec, cluster_resolver::Error> {
    tokio::time::timeout(PROMPT, changes.next())
        .await
        .expect("an item within the deadline")
        .expect("watch streams never end")
}

fn spec(workers: &[&str]) -> ClusterSpec {
    ClusterSpec::builder()
        .job("worker", workers.iter().copied())
        .job("ps", [] as [&str; 0])
        .build()
        .expect("valid spec")
}

#[tokio::test]
async fn pods_added_readdressed_and_deleted_are_followed() {
    let (server, events) = api_server(vec![pod("w-0", "Running", Some("10.0.0.1"), 90)], 0).await;
    let mut changes = resolver(&server).watch(options());
    assert_eq!(next(&mut changes).await.unwrap(), spec(&["10.0.0.1:2222"]));
    // Both selectors are watched, in the namespace given, from the listing's version.
    watching(&server, 2).await;
    for request in server.requests() {
        assert_eq!(request.path, "/api/v1/namespaces/training/pods");
        if request.query("watch") == Some("true") {
            assert_eq!(request.query("resourceVersion"), Some("100"));
        }
    }

    // A pod not yet running, or running without its IP, is not a member.
    events
        .send(event("ADDED", pod("w-1", "Pending", None, 101)))
        .unwrap();
    events
        .send(event("MODIFIED", pod("w-1", "Running", None, 102)))
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(400), changes.next())
            .await
            .is_err()
    );

    events
        .send(event(
            "MODIFIED",
            pod("w-1", "Running", Some("10.0.0.2"), 103),
        ))
        .unwrap();
    assert_eq!(
        next(&mut changes).await.unwrap(),
        spec(&["10.0.0.1:2222", "10.0.0.2:2222"])
    );

    events
        .send(event(
            "MODIFIED",
            pod("w-0", "Running", Some("10.0.0.9"), 104),
        ))
        .unwrap();
    assert_eq!(
        next(&mut changes).await.unwrap(),
        spec(&["10.0.0.9:2222", "10.0.0.2:2222"])
    );

    events
        .send(event(
            "DELETED",
            pod("w-1", "Running", Some("10.0.0.2"), 105),
        ))
        .unwrap();
    assert_eq!(next(&mut changes).await.unwrap(), spec(&["10.0.0.9:2222"]));

    // A pod that stops running leaves the cluster.
    events
        .send(event(
            "MODIFIED",
            pod("w-0", "Failed", Some("10.0.0.9"), 106),
        ))
        .unwrap();
    assert_eq!(next(&mut changes).await.unwrap(), spec(&[]));
    drop(changes);
    server.stop().await;
}

#[tokio::test]
async fn a_burst_of_pod_events_is_one_change() {
    let (server, events) = api_server(Vec::new(), 0).await;
    let mut changes = resolver(&server).watch(options());
    assert_eq!(next(&mut changes).await.unwrap(), spec(&[]));
    watching(&server, 2).await;
    for (i, name) in ["w-0", "w-1", "w-2"].iter().enumerate() {
        let ip = format!("10.0.0.{i}");
        events
            .send(event(
                "ADDED",
                pod(name, "Running", Some(&ip), 200 + i as u32),
            ))
            .unwrap();
    }
    assert_eq!(
        next(&mut changes).await.unwrap(),
        spec(&["10.0.0.0:2222", "10.0.0.1:2222", "10.0.0.2:2222"])
    );
    server.stop().await;
}

#[tokio::test]
async fn a_failed_listing_is_reported_and_retried() {
    let (server, _events) = api_server(vec![pod("w-0", "Running", Some("10.0.0.1"), 90)], 1).await;
    let mut changes = resolver(&server).watch(options());
    let err = next(&mut changes).await.unwrap_err();
    let message = Chain(&err).to_string();
    assert!(
        message.starts_with(
            "watching pods in namespace \"training\" with label selector \"app=w\" failed: "
        ),
        "{message}"
    );
    assert!(message.contains("forbidden"), "{message}");
    assert_eq!(next(&mut changes).await.unwrap(), spec(&["10.0.0.1:2222"]));
    server.stop().await;
}

#[tokio::test]
async fn dropping_the_stream_closes_the_watches() {
    let (server, events) = api_server(Vec::new(), 0).await;
    let mut changes = resolver(&server).watch(options());
    assert_eq!(next(&mut changes).await.unwrap(), spec(&[]));
    watching(&server, 2).await;
    assert_eq!(events.receiver_count(), 1);
    drop(changes);
    // The server sees the closed connection at its next write, and lets go of its receiver.
    let deadline = Instant::now() + PROMPT;
    let mut version = 300;
    while events.receiver_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "the watch connection stayed open"
        );
        version += 1;
        let _ = events.send(event("ADDED", pod("w-0", "Pending", None, version)));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watches = |server: &HttpServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.query("watch") == Some("true"))
            .count()
    };
    let before = watches(&server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(watches(&server), before, "nothing watches again");
    server.stop().await;
}

#[tokio::test]
async fn a_pod_selected_twice_is_reported_until_it_is_not() {
    let (server, events) = api_server(vec![pod("w-0", "Running", Some("10.0.0.1"), 90)], 0).await;
    let resolver = Arc::new(
        KubernetesClusterResolver::new()
            .with_job("worker", ["app=w"])
            .with_job("ps", ["app=w"])
            .with_client(client(&server, "training")),
    );
    let mut changes = resolver.watch(options());
    let err = next(&mut changes).await.unwrap_err();
    assert!(err.to_string().contains("\"w-0\""), "{err}");
    watching(&server, 2).await;
    events
        .send(event(
            "DELETED",
            pod("w-0", "Running", Some("10.0.0.1"), 91),
        ))
        .unwrap();
    assert_eq!(next(&mut changes).await.unwrap(), spec(&[]));
    server.stop().await;
}
