//! `GceClusterResolver` against a loopback server playing the GCE metadata server and the
//! Compute Engine API, with real API documents (`gce/*.json`: `instanceGroups.listInstances`
//! pages, `instances.get` instances, a metadata token, an API error).
//!
//! TensorFlow's GCE resolver needs `googleapiclient`, which its venv does not have, so there is
//! no differential test; its request (`body={'instanceState': 'RUNNING'}, orderBy='name'`,
//! paging, `networkInterfaces[0].networkIP`) is asserted here instead.

use std::time::{Duration, Instant};

use cluster_resolver::{ClusterResolver, Env, Error, GceClusterResolver};
use cluster_spec::__private::error_chain::Chain;
use cluster_spec::ClusterSpec;

use http_standin::{HttpServer, Request, Response};

const PAGE1: &str = include_str!("gce/list_instances_page1.json");
const PAGE2: &str = include_str!("gce/list_instances_page2.json");
const EMPTY: &str = include_str!("gce/list_instances_empty.json");
const VM_1C3D: &str = include_str!("gce/instance_tf-workers-1c3d.json");
const VM_7KQ2: &str = include_str!("gce/instance_tf-workers-7kq2.json");
const VM_M4ZT: &str = include_str!("gce/instance_tf-workers-m4zt.json");
const TOKEN: &str = include_str!("gce/metadata_token.json");
const NOT_FOUND: &str = include_str!("gce/error_not_found.json");

/// `nextPageToken` of page 1, with the `+`, `/` and `=` real tokens have.
const PAGE_TOKEN: &str =
    "Cj0I7qfW1ZTQ+QI6MgoCGAMKAyD/////DwoCGAEKAhgDCgIYAgoCGAEKAiAACgIgAgoFIKf4hGQ=";
const ACCESS_TOKEN: &str = "ya29.c.c0ASRK0Gb3mLzYx8qT-metadata-token-for-tests";
const ZONE_PATH: &str = "/compute/v1/projects/ml-research-4815/zones/us-central1-a";
const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

/// The metadata server and the Compute API of project `ml-research-4815`, zone
/// `us-central1-a`, group `tf-workers` (three RUNNING instances on two pages) and
/// `empty-group`; Compute calls need the metadata server's token.
fn google(request: &Request) -> Response {
    if request.path == TOKEN_PATH {
        return match request.header("metadata-flavor") {
            Some("Google") => Response::json(TOKEN),
            _ => Response::status(403, "Missing Metadata-Flavor:Google header."),
        };
    }
    if request.header("authorization") != Some(&format!("Bearer {ACCESS_TOKEN}")) {
        return Response::status(
            401,
            r#"{"error": {"code": 401, "message": "Request is missing required authentication credential.", "status": "UNAUTHENTICATED"}}"#,
        );
    }
    let Some(rest) = request.path.strip_prefix(ZONE_PATH) else {
        return Response::status(404, NOT_FOUND);
    };
    match (request.method.as_str(), rest) {
        ("POST", "/instanceGroups/tf-workers/listInstances") => match request.query("pageToken") {
            None => Response::json(PAGE1),
            Some(PAGE_TOKEN) => Response::json(PAGE2),
            Some(_) => Response::status(
                400,
                r#"{"error": {"code": 400, "message": "Invalid page token."}}"#,
            ),
        },
        ("POST", "/instanceGroups/empty-group/listInstances") => Response::json(EMPTY),
        ("GET", "/instances/tf-workers-1c3d") => Response::json(VM_1C3D),
        ("GET", "/instances/tf-workers-7kq2") => Response::json(VM_7KQ2),
        ("GET", "/instances/tf-workers-m4zt") => Response::json(VM_M4ZT),
        _ => Response::status(404, NOT_FOUND),
    }
}

fn resolver(server: &HttpServer, group: &str) -> GceClusterResolver {
    GceClusterResolver::new("ml-research-4815", "us-central1-a", group, 8470)
        .with_metadata_url(server.url())
        .with_compute_url(format!("{}/compute/v1", server.url()))
}

fn spec(json: &str) -> ClusterSpec {
    ClusterSpec::from_json(json).expect("valid spec")
}

#[tokio::test]
async fn every_page_of_running_instances_ordered_by_name() {
    let server = HttpServer::start(google).await;
    let got = resolver(&server, "tf-workers")
        .cluster_spec()
        .await
        .unwrap();
    // By instance name (1c3d, 7kq2, m4zt); TensorFlow's string sort of "ip:port" would give
    // 10.128.0.10, 10.128.0.23, 10.128.0.9.
    assert_eq!(
        got,
        spec(r#"{"worker": ["10.128.0.10:8470", "10.128.0.9:8470", "10.128.0.23:8470"]}"#)
    );

    let requests = server.requests();
    assert_eq!(requests[0].path, TOKEN_PATH);
    assert_eq!(requests[0].header("metadata-flavor"), Some("Google"));
    let lists: Vec<&Request> = requests
        .iter()
        .filter(|r| r.path.ends_with("/listInstances"))
        .collect();
    assert_eq!(lists.len(), 2, "both pages");
    for (list, token) in lists.iter().zip([None, Some(PAGE_TOKEN)]) {
        assert_eq!(list.method, "POST");
        assert_eq!(
            list.path,
            format!("{ZONE_PATH}/instanceGroups/tf-workers/listInstances")
        );
        assert_eq!(list.query("orderBy"), Some("name"));
        assert_eq!(list.query("pageToken"), token);
        assert_eq!(list.header("content-type"), Some("application/json"));
        let body: serde_json::Value = serde_json::from_str(&list.body).unwrap();
        assert_eq!(body, serde_json::json!({"instanceState": "RUNNING"}));
    }
    let mut gets: Vec<&str> = requests
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/instances/"))
        .map(|r| r.path.as_str())
        .collect();
    gets.sort_unstable();
    assert_eq!(
        gets,
        [
            format!("{ZONE_PATH}/instances/tf-workers-1c3d"),
            format!("{ZONE_PATH}/instances/tf-workers-7kq2"),
            format!("{ZONE_PATH}/instances/tf-workers-m4zt"),
        ]
    );
    for r in requests.iter().filter(|r| r.path != TOKEN_PATH) {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {ACCESS_TOKEN}").as_str())
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_metadata_token_is_reused_until_it_expires() {
    let server = HttpServer::start(google).await;
    let resolver = resolver(&server, "tf-workers");
    resolver.cluster_spec().await.unwrap();
    resolver.cluster_spec().await.unwrap();
    let requests = server.requests();
    let tokens = requests.iter().filter(|r| r.path == TOKEN_PATH).count();
    let lists = requests
        .iter()
        .filter(|r| r.path.ends_with("/listInstances"))
        .count();
    assert_eq!((tokens, lists), (1, 4), "one token, every call lists again");
    server.stop().await;
}

#[tokio::test]
async fn a_given_token_needs_no_metadata_server() {
    let server = HttpServer::start(google).await;
    let got = GceClusterResolver::new("ml-research-4815", "us-central1-a", "tf-workers", 2222)
        .with_access_token(ACCESS_TOKEN)
        .with_metadata_url("http://127.0.0.1:9") // never asked
        .with_compute_url(format!("{}/compute/v1/", server.url()))
        .with_task_type("trainer")
        .cluster_spec()
        .await
        .unwrap();
    assert_eq!(
        got,
        spec(r#"{"trainer": ["10.128.0.10:2222", "10.128.0.9:2222", "10.128.0.23:2222"]}"#)
    );
    assert!(server.requests().iter().all(|r| r.path != TOKEN_PATH));
    server.stop().await;
}

#[tokio::test]
async fn gce_metadata_host_locates_the_metadata_server() {
    let server = HttpServer::start(google).await;
    let host = server.url().trim_start_matches("http://").to_owned();
    let got = GceClusterResolver::new("ml-research-4815", "us-central1-a", "tf-workers", 8470)
        .with_env(Env::from_iter([("GCE_METADATA_HOST", host)]))
        .with_compute_url(format!("{}/compute/v1", server.url()))
        .cluster_spec()
        .await
        .unwrap();
    assert_eq!(got.num_tasks("worker").unwrap(), 3);
    assert_eq!(server.requests()[0].path, TOKEN_PATH);
    server.stop().await;
}

#[tokio::test]
async fn an_empty_group_is_an_empty_job() {
    let server = HttpServer::start(google).await;
    let got = resolver(&server, "empty-group")
        .cluster_spec()
        .await
        .unwrap();
    assert_eq!(got.jobs(), ["worker"]);
    assert_eq!(got.num_tasks("worker").unwrap(), 0);
    server.stop().await;
}

#[tokio::test]
async fn master_as_tensorflow() {
    let server = HttpServer::start(google).await;
    let mut r = resolver(&server, "tf-workers");
    // Task 0 of `worker` by default.
    assert_eq!(
        r.master(None, None, None).await.unwrap(),
        "grpc://10.128.0.10:8470"
    );
    assert_eq!(
        r.master(None, Some(2), Some("http")).await.unwrap(),
        "http://10.128.0.23:8470"
    );
    assert_eq!(
        r.master(None, Some(1), Some("")).await.unwrap(),
        "grpc://10.128.0.9:8470"
    );
    r.set_rpc_layer(None);
    r.set_task_id(Some(1));
    assert_eq!(r.master(None, None, None).await.unwrap(), "10.128.0.9:8470");
    assert_eq!(r.task_id(), Some(1));
    r.set_task_id(None);
    assert_eq!(r.master(None, None, None).await.unwrap(), "");
    let err = r.master(Some("ps"), Some(0), None).await.unwrap_err();
    assert_eq!(err.to_string(), "No such job in cluster: 'ps'");
    server.stop().await;
}

#[tokio::test]
async fn api_errors_carry_the_request_and_googles_message() {
    let server = HttpServer::start(google).await;
    let err = resolver(&server, "missing")
        .cluster_spec()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "POST {}{ZONE_PATH}/instanceGroups/missing/listInstances?orderBy=name returned HTTP 404: \
             The resource 'projects/ml-research-4815/zones/us-central1-a/instanceGroups/missing' was not found",
            server.url()
        )
    );
    server.stop().await;
}

#[tokio::test]
async fn a_failing_metadata_server_is_named() {
    let server = HttpServer::start(|_| Response::status(404, "Not Found")).await;
    let err = resolver(&server, "tf-workers")
        .cluster_spec()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "GET {}{TOKEN_PATH} returned HTTP 404: Not Found",
            server.url()
        )
    );
    server.stop().await;
}

#[tokio::test]
async fn every_failed_instance_is_reported() {
    let server = HttpServer::start(|request| {
        if request.path.ends_with("/instances/tf-workers-7kq2") {
            Response::json(VM_7KQ2)
        } else if request.path.contains("/instances/") {
            Response::status(
                503,
                r#"{"error": {"code": 503, "message": "Backend Error"}}"#,
            )
        } else {
            google(request)
        }
    })
    .await;
    let err = resolver(&server, "tf-workers")
        .cluster_spec()
        .await
        .unwrap_err();
    let Error::Multiple { errors } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(errors.len(), 2);
    let text = err.to_string();
    assert!(text.starts_with("2 calls failed: "), "{text}");
    assert!(
        text.contains("/instances/tf-workers-1c3d returned HTTP 503: Backend Error"),
        "{text}"
    );
    assert!(
        text.contains("/instances/tf-workers-m4zt returned HTTP 503: Backend Error"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_instance_without_a_network_ip_is_named() {
    let server = HttpServer::start(|request| {
        if request.path.ends_with("/instances/tf-workers-m4zt") {
            let mut vm: serde_json::Value = serde_json::from_str(VM_M4ZT).unwrap();
            vm["networkInterfaces"] = serde_json::json!([]);
            Response::json(vm.to_string())
        } else {
            google(request)
        }
    })
    .await;
    let err = resolver(&server, "tf-workers")
        .cluster_spec()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "instance \"tf-workers-m4zt\" of instance group \"tf-workers\" has no networkInterfaces[0].networkIP"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_page_token_seen_twice_ends_the_listing() {
    let server = HttpServer::start(|request| {
        if request.path.ends_with("/listInstances") {
            Response::json(PAGE1) // always hands out the same token
        } else {
            google(request)
        }
    })
    .await;
    let err = resolver(&server, "tf-workers")
        .cluster_spec()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("was already returned: the listing loops"),
        "{err}"
    );
    let lists = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/listInstances"))
        .count();
    assert_eq!(lists, 2, "the second page repeats the first token");
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_api_hits_the_deadline() {
    let server =
        HttpServer::start(|request| google(request).delayed(Duration::from_secs(10))).await;
    let started = Instant::now();
    let err = resolver(&server, "tf-workers")
        .with_request_timeout(Duration::from_millis(300))
        .cluster_spec()
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        err.to_string(),
        format!("GET {}{TOKEN_PATH} timed out after 300ms", server.url())
    );
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_request_error() {
    // Bind and drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = GceClusterResolver::new("p", "z", "g", 8470)
        .with_access_token("t")
        .with_compute_url(format!("http://127.0.0.1:{port}/compute/v1"))
        .cluster_spec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Request { .. }), "{err:?}");
    // The error says its own layer; the causes come through `source()`.
    let url = format!(
        "http://127.0.0.1:{port}/compute/v1/projects/p/zones/z/instanceGroups/g/listInstances?orderBy=name"
    );
    assert_eq!(err.to_string(), format!("POST {url} failed"));
    let text = Chain(&err).to_string();
    assert!(
        text.starts_with(&format!("POST {url} failed: client error (Connect): ")),
        "{text}"
    );
    // The cause, not only hyper's category.
    assert!(text.contains("refused"), "{text}");
}

#[tokio::test]
async fn names_are_escaped_in_urls() {
    let server = HttpServer::start(|_| Response::json(EMPTY)).await;
    GceClusterResolver::new("example.com:ml", "us-central1-a", "a/b", 8470)
        .with_access_token("t")
        .with_compute_url(format!("{}/compute/v1", server.url()))
        .cluster_spec()
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].path,
        "/compute/v1/projects/example.com%3Aml/zones/us-central1-a/instanceGroups/a%2Fb/listInstances"
    );
    server.stop().await;
}
