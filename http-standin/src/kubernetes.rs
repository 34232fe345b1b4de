//! The Kubernetes API's documents as a real API server sends them (pods, pod lists, the lines
//! of a `?watch=true` stream), and a kubeconfig that points a client at the stand-in.

use serde_json::{Value, json};

/// A pod in namespace `namespace` with `labels`, its phase and (once scheduled) pod IP, at
/// resource version `version`.
pub fn pod(
    name: &str,
    namespace: &str,
    labels: &[(&str, &str)],
    phase: &str,
    ip: Option<&str>,
    version: u32,
) -> Value {
    let mut status = json!({"phase": phase, "hostIP": "10.128.0.7"});
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
    }
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{name}"),
            "resourceVersion": version.to_string(),
            "labels": labels
        },
        "status": status
    })
}

/// A `PodList` of `items` at resource version `version`, as a listing answers.
pub fn pod_list(items: Vec<Value>, version: u32) -> String {
    json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": version.to_string()},
        "items": items
    })
    .to_string()
}

/// One line of a watch stream: `ADDED`, `MODIFIED` or `DELETED` with the object.
pub fn event(kind: &str, object: Value) -> String {
    json!({"type": kind, "object": object}).to_string()
}

/// A kubeconfig whose current context is the API server at `server` (an anonymous user) with
/// default namespace `namespace`.
pub fn kubeconfig(server: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster:
    server: {server}
users:
- name: anonymous
  user: {{}}
contexts:
- name: test
  context:
    cluster: loopback
    user: anonymous
    namespace: {namespace}
current-context: test
"
    )
}
