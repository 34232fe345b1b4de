//! `KubernetesClusterResolver` against a loopback server answering the real API paths with real
//! PodList documents (`kubernetes/*.json`, as `kubectl get pods -o json` shows them).

#[cfg(feature = "watch")]
mod api;
mod environment;
mod requests;
#[cfg(feature = "watch")]
mod resume;
mod tensorflow;
#[cfg(feature = "watch")]
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cluster_resolver::kubernetes::{self, KubernetesClusterResolver, PodAddress, kube};
use cluster_resolver::{ClusterResolver, Error};
use cluster_spec::ClusterSpec;

use http_standin::{HttpServer, Request, Response};

const WORKERS: &str = include_str!("kubernetes/pods_worker.json");
const PS: &str = include_str!("kubernetes/pods_ps.json");
const WORKERS_PENDING: &str = include_str!("kubernetes/pods_worker_pending.json");
const FORBIDDEN: &str = include_str!("kubernetes/status_forbidden.json");
const EMPTY: &str = r#"{"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "48391"}, "items": []}"#;

/// A client of the loopback server whose default namespace is `namespace`.
fn client(server: &HttpServer, namespace: &str) -> kube::Client {
    let mut config = kube::Config::new(server.url().parse().expect("server URL"));
    config.default_namespace = namespace.to_owned();
    kube::Client::try_from(config).expect("kube client")
}

/// Answers `job-name=worker-pod` and `job-name=ps-pod` with their PodLists, anything else
/// with an empty one.
fn by_selector(request: &Request) -> Response {
    match request.query("labelSelector") {
        Some("job-name=worker-pod") => Response::json(WORKERS),
        Some("job-name=ps-pod") => Response::json(PS),
        _ => Response::json(EMPTY),
    }
}

fn spec(json: &str) -> ClusterSpec {
    ClusterSpec::from_json(json).expect("valid spec")
}

#[tokio::test]
async fn lists_each_selector_in_the_namespace_sorted_by_name() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_job("ps", ["job-name=ps-pod"])
        .with_namespace("training")
        .with_client(client(&server, "default"));

    let got = resolver.cluster_spec().await.expect("cluster spec");
    // Pod IPs, in pod-name order (`worker-pod-10-…` sorts before `worker-pod-2-…`, as TF).
    assert_eq!(
        got,
        spec(
            r#"{"worker": ["10.44.1.21:8470", "10.44.2.9:8470", "10.44.3.7:8470", "10.44.1.23:8470"],
                "ps": ["10.44.2.11:8470"]}"#
        )
    );
    assert_eq!(got.jobs(), ["worker", "ps"]);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for (request, selector) in requests
        .iter()
        .zip(["job-name=worker-pod", "job-name=ps-pod"])
    {
        assert_eq!(request.method, "GET");
        // Namespace-scoped, never /api/v1/pods (all namespaces).
        assert_eq!(request.path, "/api/v1/namespaces/training/pods");
        assert_eq!(request.query("labelSelector"), Some(selector));
        assert!(request.body.is_empty());
        assert!(
            request
                .header("host")
                .is_some_and(|host| server.url().ends_with(host))
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_clients_namespace_is_the_default() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_client(client(&server, "ml-team"));
    assert_eq!(resolver.namespace().await.unwrap(), "ml-team");
    resolver.cluster_spec().await.expect("cluster spec");
    assert_eq!(server.requests()[0].path, "/api/v1/namespaces/ml-team/pods");
    server.stop().await;
}

#[tokio::test]
async fn tensorflows_defaults() {
    let server = HttpServer::start(|_| Response::json(PS)).await;
    let resolver = KubernetesClusterResolver::new().with_client(client(&server, "default"));
    assert_eq!(
        resolver.cluster_spec().await.unwrap(),
        spec(r#"{"worker": ["10.44.2.11:8470"]}"#)
    );
    assert_eq!(
        server.requests()[0].query("labelSelector"),
        Some("job-name=tensorflow")
    );
    server.stop().await;
}

#[tokio::test]
async fn host_ip_and_port_as_tensorflow() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_port(2222)
        .with_address(PodAddress::HostIp)
        .with_client(client(&server, "training"));
    // Node IPs: two workers share node 10.128.0.12, TF's collision.
    assert_eq!(
        resolver.cluster_spec().await.unwrap(),
        spec(
            r#"{"worker": ["10.128.0.12:2222", "10.128.0.13:2222", "10.128.0.14:2222", "10.128.0.12:2222"]}"#
        )
    );
    server.stop().await;
}

#[tokio::test]
async fn selectors_of_a_job_are_concatenated_in_order() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=ps-pod", "job-name=worker-pod"])
        .with_client(client(&server, "training"));
    let got = resolver.cluster_spec().await.unwrap();
    assert_eq!(got.num_tasks("worker").unwrap(), 5);
    assert_eq!(got.task_address("worker", 0).unwrap(), "10.44.2.11:8470");
    assert_eq!(got.task_address("worker", 1).unwrap(), "10.44.1.21:8470");
    server.stop().await;
}

#[tokio::test]
async fn a_pod_selected_twice_is_an_error() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_job("chief", ["job-name=worker-pod"])
        .with_client(client(&server, "training"));
    let err = resolver.cluster_spec().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Pod \"worker-pod-0-x4c8d\" in namespace \"training\" is selected twice: \
         by \"job 'worker': job-name=worker-pod\" and by \"job 'chief': job-name=worker-pod\""
    );
    server.stop().await;
}

#[tokio::test]
async fn an_empty_selection_is_an_empty_job() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=nothing"])
        .with_client(client(&server, "training"));
    let got = resolver.cluster_spec().await.unwrap();
    assert_eq!(got.jobs(), ["worker"]);
    assert_eq!(got.num_tasks("worker").unwrap(), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_pod_not_running_is_named_with_its_phase() {
    let server = HttpServer::start(|_| Response::json(WORKERS_PENDING)).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_client(client(&server, "training"));
    let err = resolver.cluster_spec().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kubernetes(kubernetes::Error::PodsNotRunning { waited: None, .. })
        ),
        "{err:?}"
    );
    // TensorFlow's sentence, then where.
    assert_eq!(
        err.to_string(),
        "Pod \"worker-pod-1-9qjrn\" is not running; phase: \"Pending\" (namespace \"training\")"
    );
    server.stop().await;
}

#[tokio::test]
async fn waits_for_pending_pods_then_resolves() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let server = HttpServer::start(move |_| {
        // Pending for the first two listings, then all running.
        match seen.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => Response::json(WORKERS_PENDING),
            _ => Response::json(WORKERS),
        }
    })
    .await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_wait_for_running(Duration::from_secs(20))
        .with_client(client(&server, "training"));
    let got = resolver.cluster_spec().await.unwrap();
    assert_eq!(got.num_tasks("worker").unwrap(), 4);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    server.stop().await;
}

#[tokio::test]
async fn waiting_ends_at_the_deadline_naming_the_pods() {
    let server = HttpServer::start(|_| Response::json(WORKERS_PENDING)).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_wait_for_running(Duration::from_millis(900))
        .with_client(client(&server, "training"));
    let started = Instant::now();
    let err = resolver.cluster_spec().await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let Error::Kubernetes(kubernetes::Error::PodsNotRunning {
        pods,
        waited: Some(waited),
        ..
    }) = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        pods,
        &[("worker-pod-1-9qjrn".to_owned(), "Pending".to_owned())]
    );
    assert!(*waited >= Duration::from_millis(900));
    assert!(err.to_string().contains("after waiting"), "{err}");
    // 250 + 500 ms of backoff, then the deadline: three or four listings, not a busy loop.
    let listings = server.requests().len();
    assert!((2..=5).contains(&listings), "{listings} listings");
    server.stop().await;
}

#[tokio::test]
async fn every_call_lists_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let server = HttpServer::start(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Response::json(PS)
        } else {
            Response::json(WORKERS)
        }
    })
    .await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_client(client(&server, "training"));
    assert_eq!(
        resolver
            .cluster_spec()
            .await
            .unwrap()
            .num_tasks("worker")
            .unwrap(),
        1
    );
    assert_eq!(
        resolver
            .cluster_spec()
            .await
            .unwrap()
            .num_tasks("worker")
            .unwrap(),
        4
    );
    server.stop().await;
}

#[tokio::test]
async fn master_as_tensorflow() {
    let server = HttpServer::start(by_selector).await;
    let mut resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_client(client(&server, "training"));
    // No task: "" without listing anything.
    assert_eq!(resolver.master(None, None, None).await.unwrap(), "");
    assert!(server.requests().is_empty());
    assert_eq!(
        resolver
            .master(Some("worker"), Some(1), None)
            .await
            .unwrap(),
        "grpc://10.44.2.9:8470"
    );
    resolver.set_task(Some("worker".to_owned()), Some(3));
    assert_eq!(
        resolver.master(None, None, Some("http")).await.unwrap(),
        "http://10.44.1.23:8470"
    );
    // An empty layer falls back to the resolver's (TF's `rpc_layer or self.rpc_layer`).
    assert_eq!(
        resolver.master(None, None, Some("")).await.unwrap(),
        "grpc://10.44.1.23:8470"
    );
    resolver.set_rpc_layer(None);
    assert_eq!(
        resolver.master(None, Some(0), None).await.unwrap(),
        "10.44.1.21:8470"
    );
    let err = resolver.master(None, Some(9), None).await.unwrap_err();
    assert!(err.to_string().contains("No task with index 9"), "{err}");
    server.stop().await;
}

#[tokio::test]
async fn api_errors_are_reported_with_the_call() {
    let server = HttpServer::start(|_| Response::status(403, FORBIDDEN)).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_client(client(&server, "training"));
    let err = resolver.cluster_spec().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "listing pods in namespace \"training\" with label selector \"job-name=worker-pod\" returned \
         HTTP 403: pods is forbidden: User \"system:serviceaccount:training:tf-trainer\" cannot list \
         resource \"pods\" in API group \"\" in the namespace \"training\""
    );
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_api_server_hits_the_deadline() {
    let server =
        HttpServer::start(|_| Response::json(WORKERS).delayed(Duration::from_secs(10))).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_request_timeout(Duration::from_millis(300))
        .with_client(client(&server, "training"));
    let started = Instant::now();
    let err = resolver.cluster_spec().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        err.to_string(),
        "listing pods in namespace \"training\" with label selector \"job-name=worker-pod\" timed out after 300ms"
    );
    server.stop().await;
}
