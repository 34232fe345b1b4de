//! Differential test against TensorFlow 2.21's `KubernetesClusterResolver`: TensorFlow gets an
//! `override_client` whose `list_pod_for_all_namespaces` returns the same PodList documents
//! our loopback server serves, and both resolvers' specs, masters and errors are compared, in
//! one python run. Ours uses [`PodAddress::HostIp`] here, TensorFlow's address choice.

use cluster_resolver::ClusterResolver;
use cluster_resolver::kubernetes::{KubernetesClusterResolver, PodAddress};
use cluster_spec::ClusterSpec;
use serde_json::{Value, json};

use super::{PS, WORKERS, WORKERS_PENDING, client};
use http_standin::{HttpServer, Response};

/// Reads the cases from stdin, answers each with TensorFlow's resolver, prints one JSON line.
const SCRIPT: &str = r#"
import json, sys
from types import SimpleNamespace as NS
from tensorflow.python.distribute.cluster_resolver.kubernetes_cluster_resolver import (
    KubernetesClusterResolver)

class FakeCoreV1Api:
    """Stands in for kubernetes.client.CoreV1Api: the PodLists of the case, as objects."""
    def __init__(self, lists):
        self.lists = lists
    def list_pod_for_all_namespaces(self, label_selector):
        doc = self.lists.get(label_selector, {"items": []})
        return NS(items=[
            NS(metadata=NS(name=p["metadata"]["name"]),
               status=NS(phase=p["status"].get("phase"), host_ip=p["status"].get("hostIP"),
                         pod_ip=p["status"].get("podIP")))
            for p in doc["items"]])

out = []
for case in json.load(sys.stdin):
    # A list of pairs: JSON objects would lose the job order.
    r = KubernetesClusterResolver(dict(case["mapping"]), tf_server_port=case["port"],
                                  override_client=FakeCoreV1Api(case["lists"]))
    answer = {}
    try:
        answer["spec"] = r.cluster_spec().as_dict()
        answer["jobs"] = r.cluster_spec().jobs
        r.task_type, r.task_id = case["task"]
        answer["master"] = r.master()
    except RuntimeError as e:
        answer["error"] = str(e)
    out.append(answer)
print(json.dumps(out))
"#;

struct Case {
    /// Job → selectors; empty means TensorFlow's default mapping.
    mapping: Vec<(&'static str, Vec<&'static str>)>,
    port: u16,
    /// Selector → PodList document.
    lists: Vec<(&'static str, &'static str)>,
    task: (&'static str, u32),
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            mapping: vec![
                ("worker", vec!["job-name=worker-pod"]),
                ("ps", vec!["job-name=ps-pod"]),
            ],
            port: 8470,
            lists: vec![("job-name=worker-pod", WORKERS), ("job-name=ps-pod", PS)],
            task: ("worker", 1),
        },
        Case {
            mapping: vec![("worker", vec!["job-name=ps-pod", "job-name=worker-pod"])],
            port: 2222,
            lists: vec![("job-name=worker-pod", WORKERS), ("job-name=ps-pod", PS)],
            task: ("worker", 4),
        },
        Case {
            mapping: vec![],
            port: 8470,
            lists: vec![("job-name=tensorflow", PS)],
            task: ("worker", 0),
        },
        Case {
            mapping: vec![
                ("chief", vec!["job-name=ps-pod"]),
                ("worker", vec!["job-name=none"]),
            ],
            port: 8470,
            lists: vec![("job-name=ps-pod", PS)],
            task: ("chief", 0),
        },
        Case {
            mapping: vec![("worker", vec!["job-name=worker-pod"])],
            port: 8470,
            lists: vec![("job-name=worker-pod", WORKERS_PENDING)],
            task: ("worker", 0),
        },
    ]
}

/// Ours: the same case through the loopback server.
async fn ours(case: &Case) -> Value {
    let lists: Vec<(String, String)> = case
        .lists
        .iter()
        .map(|(s, d)| ((*s).to_owned(), (*d).to_owned()))
        .collect();
    let server = HttpServer::start(move |request| {
        let selector = request.query("labelSelector").unwrap_or_default();
        match lists.iter().find(|(s, _)| s == selector) {
            Some((_, doc)) => Response::json(doc.clone()),
            None => Response::json(
                r#"{"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}"#,
            ),
        }
    })
    .await;
    let mut resolver = KubernetesClusterResolver::new()
        .with_port(case.port)
        .with_address(PodAddress::HostIp)
        .with_client(client(&server, "training"));
    for (job, selectors) in &case.mapping {
        resolver = resolver.with_job(*job, selectors.iter().copied());
    }
    resolver.set_task(Some(case.task.0.to_owned()), Some(case.task.1));
    let answer = match resolver.cluster_spec().await {
        Ok(spec) => json!({
            "spec": serde_json::from_str::<Value>(&spec.to_json()).unwrap(),
            "jobs": spec.jobs(),
            "master": resolver.master(None, None, None).await.unwrap(),
        }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    server.stop().await;
    answer
}

#[tokio::test]
async fn same_specs_masters_and_errors_as_tensorflow() {
    let cases = cases();
    let input: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({
                "mapping": c.mapping.iter().map(|(j, s)| json!([j, s])).collect::<Vec<_>>(),
                "port": c.port,
                "lists": c.lists.iter().map(|(s, d)| (s.to_string(), serde_json::from_str::<Value>(d).unwrap())).collect::<serde_json::Map<_, _>>(),
                "task": [c.task.0, c.task.1],
            })
        })
        .collect();
    let stdout = tf_oracle::run(SCRIPT, &Value::from(input).to_string());
    let last = stdout.lines().last().expect("TensorFlow printed nothing");
    let theirs: Vec<Value> = serde_json::from_str(last).expect("TensorFlow's JSON");
    assert_eq!(theirs.len(), cases.len());
    for (i, (case, tf)) in cases.iter().zip(&theirs).enumerate() {
        let us = ours(case).await;
        match (&tf["error"], &us["error"]) {
            (Value::String(tf_error), Value::String(our_error)) => {
                // TensorFlow's sentence, then ours adds the namespace.
                assert!(
                    our_error.starts_with(tf_error.as_str()),
                    "case {i}: TF {tf_error:?}, ours {our_error:?}"
                );
            }
            (Value::Null, Value::Null) => {
                let tf_spec = ClusterSpec::from_json(&tf["spec"].to_string()).unwrap();
                let our_spec = ClusterSpec::from_json(&us["spec"].to_string()).unwrap();
                assert_eq!(our_spec, tf_spec, "case {i}");
                assert_eq!(us["spec"], tf["spec"], "case {i}: as_dict");
                assert_eq!(us["jobs"], tf["jobs"], "case {i}: job order");
                assert_eq!(us["master"], tf["master"], "case {i}: master");
            }
            _ => panic!("case {i}: TensorFlow {tf}, ours {us}"),
        }
    }
}
