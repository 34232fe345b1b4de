"""tfcluster.tf.KubernetesClusterResolver against a stand-in of the Kubernetes API server (a
loopback HTTP server answering pod listings with PodList documents as a real API server
sends them, found through a kubeconfig), beside TensorFlow 2.21's own resolver given the
same pods through its `override_client`."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

import pytest
import tensorflow as tf

import tfcluster
import tfcluster.tf

TF = tf.distribute.cluster_resolver

NAMESPACE = "training"

# (name, labels, phase, pod IP, host IP): the pods the API server holds.
PODS = [
    ("w-1", {"app": "w"}, "Running", "10.8.0.11", "10.128.0.1"),
    ("w-0", {"app": "w"}, "Running", "10.8.0.10", "10.128.0.2"),
    ("w-2", {"app": "w"}, "Running", "10.8.0.12", "10.128.0.3"),
    ("p-0", {"app": "ps", "tier": "a"}, "Running", "10.8.1.10", "10.128.0.4"),
    ("other", {"app": "x"}, "Running", "10.8.2.10", "10.128.0.5"),
]


def pod(name, labels, phase, pod_ip, host_ip):
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                     "resourceVersion": "90", "labels": labels},
        "status": {"phase": phase, "podIP": pod_ip, "hostIP": host_ip},
    }


def selected(selector):
    """The pods a `k=v[,k=v]` label selector picks."""
    wanted = dict(term.split("=", 1) for term in selector.split(",") if term)
    return [p for p in PODS if all(p[1].get(k) == v for k, v in wanted.items())]


class Api(BaseHTTPRequestHandler):
    """Lists pods as `GET /api/v1/namespaces/NS/pods?labelSelector=...` answers."""

    requests = []

    def do_GET(self):  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        Api.requests.append(self.path)
        selector = parse_qs(url.query).get("labelSelector", [""])[0]
        if url.path != f"/api/v1/namespaces/{NAMESPACE}/pods":
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({
            "kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "100"},
            "items": [pod(*p) for p in selected(selector)],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api(env, monkeypatch, tmp_path):
    """The stand-in serving, and a kubeconfig pointing at it with namespace `training`."""
    Api.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = tmp_path / "kubeconfig.yaml"
    config.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster:
    server: http://127.0.0.1:{server.server_port}
users:
- name: anonymous
  user: {{}}
contexts:
- name: test
  context:
    cluster: loopback
    user: anonymous
    namespace: {NAMESPACE}
current-context: test
""")
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setenv("HOME", str(tmp_path))
    yield Api
    server.shutdown()


class FakeCoreV1Api:
    """The part of the `kubernetes` client TensorFlow's resolver calls, over the same pods."""

    def list_pod_for_all_namespaces(self, label_selector):
        items = [SimpleNamespace(metadata=SimpleNamespace(name=name),
                                 status=SimpleNamespace(phase=phase, pod_ip=pod_ip,
                                                        host_ip=host_ip))
                 for name, _, phase, pod_ip, host_ip in selected(label_selector)]
        return SimpleNamespace(items=items)


def view(resolver):
    return {
        "cluster": resolver.cluster_spec().as_dict(),
        "task": (resolver.task_type, resolver.task_id),
        "rpc_layer": resolver.rpc_layer,
        "environment": resolver.environment,
        "master": resolver.master(),
        "master(worker, 1)": resolver.master("worker", 1),
    }


MAPPINGS = [
    {"worker": ["app=w"]},
    {"worker": ["app=w"], "ps": ["app=ps,tier=a"]},
    {"worker": ["app=ps", "app=w"]},
]


def test_the_wheel_has_the_kubernetes_resolver():
    assert tfcluster.HAS_KUBERNETES
    assert "KubernetesClusterResolver" in tfcluster.tf.__all__


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("args", [{}, {"tf_server_port": 2222, "rpc_layer": "grpc+verbs"}])
def test_kubernetes_resolver_agrees_with_tensorflow_on_the_api_servers_pods(api, mapping, args):
    # TensorFlow's resolver gives the node's IP; ours takes address="host_ip" for it.
    ours = tfcluster.tf.KubernetesClusterResolver(mapping, address="host_ip", **args)
    theirs = TF.KubernetesClusterResolver(mapping, override_client=FakeCoreV1Api(), **args)
    assert view(ours) == view(theirs)
    # Each selector of the mapping listed in the kubeconfig's namespace (at every
    # cluster_spec(): master() reads the cluster again, as TensorFlow's does).
    selectors = {s for selectors in mapping.values() for s in selectors}
    asked = {parse_qs(urlparse(r).query)["labelSelector"][0] for r in api.requests}
    assert asked == selectors, api.requests
    assert all(urlparse(r).path == f"/api/v1/namespaces/{NAMESPACE}/pods" for r in api.requests)


def test_kubernetes_resolver_gives_pod_ips_by_default(api):
    resolver = tfcluster.tf.KubernetesClusterResolver({"worker": ["app=w"]})
    assert resolver.cluster_spec().as_dict() == {
        "worker": ["10.8.0.10:8470", "10.8.0.11:8470", "10.8.0.12:8470"]}
    assert isinstance(resolver, TF.ClusterResolver)
