"""A stand-in Kubernetes API server for the guide's `resolve --from kubernetes` example.

No real API server can be installed where the tests run. This one answers the one call the
resolver makes, `GET /api/v1/namespaces/NS/pods?labelSelector=KEY=VALUE`, with a PodList of
running pods named VALUE-0, VALUE-1, ... at the addresses given, in the documents'
shape the `http-standin` crate's tests hold to kube-apiserver's; anything else is a 404.
It writes ./kubeconfig pointing at itself (plain HTTP on loopback) and serves until killed.

    python kube_apiserver.py job-name=tf-worker 10.0.0.1 10.0.0.2
"""

import http.server
import json
import os
import sys
import urllib.parse

SELECTOR = sys.argv[1]
KEY, VALUE = SELECTOR.split("=", 1)
IPS = sys.argv[2:]


def pod(i, ip):
    name = f"{VALUE}-{i}"
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {KEY: VALUE},
        },
        "status": {"phase": "Running", "hostIP": "10.128.0.7", "podIP": ip},
    }


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path == "/api/v1/namespaces/default/pods":
            selected = query.get("labelSelector") == [SELECTOR]
            items = [pod(i, ip) for i, ip in enumerate(IPS)] if selected else []
            body = json.dumps(
                {
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "1"},
                    "items": items,
                }
            ).encode()
            self.send_response(200)
        else:
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open("kubeconfig.tmp", "w") as f:
    f.write(
        f"""apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: http://127.0.0.1:{server.server_port}
users:
- name: anonymous
  user: {{}}
contexts:
- name: standin
  context:
    cluster: standin
    user: anonymous
    namespace: default
current-context: standin
"""
    )
# Renamed when whole: the example waits for the file to exist.
os.rename("kubeconfig.tmp", "kubeconfig")
server.serve_forever()
