//! The Kubernetes API's documents as a real API server sends them (pods, pod lists, the lines
//! of a `?watch=true` stream: object events, bookmarks, and the `410 Expired` status of a
//! resourceVersion too old to watch from), and a kubeconfig that points a client at the
//! stand-in.

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

/// A `BOOKMARK` line at resource version `version`, as kube-apiserver's watch cache sends it
/// to a watch that asked for `allowWatchBookmarks=true`: the watched kind's empty object
/// (`newFunc()`) with only `metadata.resourceVersion` set (cacher.go's bookmark event,
/// `staging/src/k8s.io/apiserver/pkg/storage/cacher/`). `initial_events_end` adds the
/// `k8s.io/initial-events-end: "true"` annotation, which the server puts on the first bookmark
/// of a streaming list (`sendInitialEvents=true`) only (cache_watcher.go,
/// `convertToWatchEvent`); a list-then-watch client, as kube-runtime's watcher by default,
/// never gets it.
///
/// Written out rather than through `json!` so the bytes keep Go's field order; the empty Pod
/// encodes `spec.containers` as `null` and `status` as `{}`, and `creationTimestamp` is
/// omitted (`omitzero` in apimachinery's `ObjectMeta`).
pub fn bookmark(version: u32, initial_events_end: bool) -> String {
    let annotations = if initial_events_end {
        r#","annotations":{"k8s.io/initial-events-end":"true"}"#
    } else {
        ""
    };
    format!(
        r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{version}"{annotations}}},"spec":{{"containers":null}},"status":{{}}}}}}"#
    )
}

/// The `Status` kube-apiserver answers for resource version `requested` when its watch history
/// starts after `oldest`: `410`, reason `Expired`, message "too old resource version: X (Y)"
/// (apimachinery's `errors.NewResourceExpired` from watch_cache.go's
/// `getAllEventsSinceLocked`, in `staging/src/k8s.io/apiserver/pkg/storage/cacher/`).
///
/// The body of an HTTP 410 answer as it is, or the object of an `ERROR` event
/// ([`expired_event`]). In Go's field order (`metav1.Status`: kind, apiVersion, metadata,
/// status, message, reason, code).
pub fn expired(requested: u32, oldest: u32) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"too old resource version: {requested} ({oldest})","reason":"Expired","code":410}}"#
    )
}

/// The `ERROR` line carrying [`expired`]: what kube-apiserver sends (on an HTTP 200 stream,
/// which it then ends) to a watch whose resource version is too old, since "once we have passed
/// authn/authz/admission, and successfully parsed a resource version, other errors must fail
/// with a watch event of type ERROR, rather than a directly returned error" (cacher.go,
/// `Watch`).
pub fn expired_event(requested: u32, oldest: u32) -> String {
    format!(
        r#"{{"type":"ERROR","object":{}}}"#,
        expired(requested, oldest)
    )
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
