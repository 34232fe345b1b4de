//! `TpuClusterResolver` against a loopback server playing the metadata server and the Cloud TPU
//! API v1, with real `Node` documents (`tpu/*.json`).
//!
//! TensorFlow's TPU resolver needs `googleapiclient` for the API, which its venv does not
//! have, so there is no differential test; TensorFlow's wording is asserted instead.

use std::collections::BTreeMap;

use cluster_resolver::{ClusterResolver, Env, Error, TpuClusterResolver, tpu};
use cluster_spec::__private::error_chain::Chain;
use cluster_spec::ClusterSpec;

use http_standin::{HttpServer, Request, Response};

const V3_32: &str = include_str!("tpu/node_v3_32_ready.json");
const V3_8_CREATING: &str = include_str!("tpu/node_v3_8_creating.json");
const V2_8_MAINTENANCE: &str = include_str!("tpu/node_v2_8_maintenance.json");
const NOT_FOUND: &str = include_str!("tpu/error_not_found.json");
const TOKEN: &str = include_str!("gce/metadata_token.json");

const NODE_PATH: &str = "/v1/projects/ml-research-4815/locations/us-central1-a/nodes/";
const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

/// The metadata server of a VM in `ml-research-4815`/`us-central1-a`, and the TPU API with
/// node `tf-tpu` answering `node`.
fn google(node: &'static str) -> impl Fn(&Request) -> Response + Send + Sync + 'static {
    move |request| match request.path.as_str() {
        TOKEN_PATH => Response::json(TOKEN),
        "/computeMetadata/v1/project/project-id" => Response::json("ml-research-4815"),
        "/computeMetadata/v1/instance/zone" => {
            Response::json("projects/123456789012/zones/us-central1-a")
        }
        path if path == format!("{NODE_PATH}tf-tpu") => Response::json(node),
        _ => Response::status(404, NOT_FOUND),
    }
}

fn resolver(server: &HttpServer, tpu: &str) -> TpuClusterResolver {
    TpuClusterResolver::new(tpu)
        .with_project("ml-research-4815")
        .with_zone("us-central1-a")
        .with_metadata_url(server.url())
        .with_tpu_url(format!("{}/v1", server.url()))
}

#[tokio::test]
async fn a_ready_nodes_endpoints_are_the_workers() {
    let server = HttpServer::start(google(V3_32)).await;
    let r = resolver(&server, "tf-tpu").with_coordinator("coordinator", "10.128.0.2:8470");
    let got = r.cluster_spec().await.unwrap();
    assert_eq!(
        got.to_json(),
        r#"{"worker":["10.240.1.2:8470","10.240.1.3:8470","10.240.1.4:8470","10.240.1.5:8470"],"coordinator":["10.128.0.2:8470"]}"#
    );
    // Task 0 of the TPU job, always over gRPC (TensorFlow ignores rpc_layer here).
    assert_eq!(
        r.master(None, None, Some("http")).await.unwrap(),
        "grpc://10.240.1.2:8470"
    );
    assert_eq!(
        r.master(Some("worker"), Some(3), None).await.unwrap(),
        "grpc://10.240.1.5:8470"
    );
    assert_eq!(
        r.master(Some("coordinator"), Some(0), None).await.unwrap(),
        "grpc://10.128.0.2:8470"
    );
    // v3-32 over 4 hosts: 8 TPU cores per host, as TensorFlow counts them.
    assert_eq!(
        r.num_accelerators(None, None).await.unwrap(),
        BTreeMap::from([("TPU".to_owned(), 8)])
    );
    let node_gets: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|q| q.path.starts_with(NODE_PATH))
        .collect();
    assert!(!node_gets.is_empty());
    for get in &node_gets {
        assert_eq!(get.method, "GET");
        assert_eq!(get.path, format!("{NODE_PATH}tf-tpu"));
        assert_eq!(
            get.header("authorization"),
            Some("Bearer ya29.c.c0ASRK0Gb3mLzYx8qT-metadata-token-for-tests")
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn project_and_zone_come_from_the_metadata_server() {
    let server = HttpServer::start(google(V3_32)).await;
    let r = TpuClusterResolver::new("tf-tpu")
        .with_job_name("tpu_worker")
        .with_metadata_url(server.url())
        .with_tpu_url(format!("{}/v1/", server.url()));
    let got = r.cluster_spec().await.unwrap();
    assert_eq!(got.jobs(), ["tpu_worker"]);
    assert_eq!(r.coordination_service_leader(), "/job:tpu_worker/task:0");
    r.cluster_spec().await.unwrap();
    let requests = server.requests();
    for path in [
        "/computeMetadata/v1/project/project-id",
        "/computeMetadata/v1/instance/zone",
    ] {
        let asked: Vec<&Request> = requests.iter().filter(|q| q.path == path).collect();
        assert_eq!(asked.len(), 1, "{path} asked once");
        assert_eq!(asked[0].header("metadata-flavor"), Some("Google"));
    }
    server.stop().await;
}

#[tokio::test]
async fn the_tpu_name_can_come_from_the_environment() {
    let server = HttpServer::start(google(V3_32)).await;
    let r = resolver(&server, "").with_env(Env::from_iter([("TPU_NAME", "tf-tpu")]));
    assert_eq!(
        r.cluster_spec().await.unwrap().num_tasks("worker").unwrap(),
        4
    );
    server.stop().await;
}

#[tokio::test]
async fn a_node_not_ready_is_tensorflows_error() {
    let server = HttpServer::start(google(V3_8_CREATING)).await;
    let r = resolver(&server, "tf-tpu");
    let err = r.cluster_spec().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "TPU \"tf-tpu\" is not yet ready; state: \"CREATING\""
    );
    assert!(matches!(
        r.num_accelerators(None, None).await,
        Err(Error::Tpu(tpu::Error::NotReady { .. }))
    ));
    server.stop().await;
}

#[tokio::test]
async fn health_is_checked_when_asked() {
    let server = HttpServer::start(google(V2_8_MAINTENANCE)).await;
    let lenient = resolver(&server, "tf-tpu");
    assert_eq!(
        lenient.cluster_spec().await.unwrap(),
        ClusterSpec::from_json(r#"{"worker": ["10.240.2.2:8470"]}"#).unwrap()
    );
    assert_eq!(
        lenient.num_accelerators(None, None).await.unwrap(),
        BTreeMap::from([("TPU".to_owned(), 8)])
    );
    let strict = resolver(&server, "tf-tpu").with_require_healthy(true);
    assert_eq!(
        strict.cluster_spec().await.unwrap_err().to_string(),
        "TPU \"tf-tpu\" is not healthy; health: \"UNHEALTHY_MAINTENANCE\""
    );
    server.stop().await;
}

#[tokio::test]
async fn a_failed_lookup_is_tensorflows_error() {
    let server = HttpServer::start(google(V3_32)).await;
    let err = resolver(&server, "missing")
        .cluster_spec()
        .await
        .unwrap_err();
    assert_eq!(
        Chain(&err).to_string(),
        format!(
            "Could not lookup TPU metadata from name 'missing'. Please doublecheck the tpu argument \
             in the TPUClusterResolver constructor. Exception: GET {}{NODE_PATH}missing returned \
             HTTP 404: Resource 'projects/ml-research-4815/locations/us-central1-a/nodes/missing' was not found",
            server.url()
        )
    );
    assert!(std::error::Error::source(&err).is_some());
    server.stop().await;
}

#[tokio::test]
async fn local_and_grpc_tpus_make_no_requests() {
    let server = HttpServer::start(google(V3_32)).await;
    let local = resolver(&server, "local");
    assert!(local.cluster_spec().await.unwrap().is_empty());
    assert_eq!(local.master(None, None, None).await.unwrap(), "");
    assert!(local.num_accelerators(None, None).await.unwrap().is_empty());
    let direct = resolver(&server, "grpc://10.240.9.2:8470");
    assert_eq!(
        direct.master(None, None, None).await.unwrap(),
        "grpc://10.240.9.2:8470"
    );
    assert!(
        direct
            .num_accelerators(None, None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(server.requests().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn without_a_task_the_master_is_the_first_worker() {
    let server = HttpServer::start(google(V3_32)).await;
    let mut r = resolver(&server, "tf-tpu");
    r.set_task_id(None);
    assert_eq!(r.task_id(), None);
    assert_eq!(
        r.master(None, None, None).await.unwrap(),
        "grpc://10.240.1.2:8470"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_node_without_endpoints_has_no_master() {
    const NO_ENDPOINTS: &str = r#"{"name": "projects/ml-research-4815/locations/us-central1-a/nodes/tf-tpu",
        "acceleratorType": "v3-8", "state": "READY", "networkEndpoints": [], "apiVersion": "V1"}"#;
    let server = HttpServer::start(google(NO_ENDPOINTS)).await;
    let mut r = resolver(&server, "tf-tpu");
    r.set_task_id(None);
    assert_eq!(
        r.master(None, None, None).await.unwrap_err().to_string(),
        "No TPUs with the specified names exist. (job 'worker' has no tasks)"
    );
    assert!(matches!(
        r.num_accelerators(None, None).await,
        Err(Error::Tpu(tpu::Error::AcceleratorType { .. }))
    ));
    server.stop().await;
}
