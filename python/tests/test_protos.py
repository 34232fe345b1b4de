"""The `.proto` files we publish, compiled by the reference compiler: grpcio-tools' protoc
(`python -m grpc_tools.protoc`, pinned in the venv by `cargo xtask python`), not protox,
which generates our Rust code. A user writing a client in Python or Go generates stubs with
protoc; a file only protox accepts (a message named as an rpc of its service) leaves them
with none. Then the generated Python client talks to a running `tfcluster rendezvous serve`.

No test here skips: a venv without grpcio-tools, or a wheel without the `tfcluster` binary,
fails them.
"""

import json
import os
import selectors
import subprocess
import sys
import time

import pytest

from conftest import REPO, VENV_BIN

# What each proto crate's files are relative to: its `proto/` (cargo xtask codegen's roots).
ROOTS = ("cluster-proto/proto", "elastic/proto")

# The service stubs the published files define, as protoc's Python plugin names them.
STUBS = {
    "tensorflow.worker_pb2_grpc": "WorkerServiceStub",
    "tensorflow.eager_service_pb2_grpc": "EagerServiceStub",
    "tfcluster.rendezvous_pb2_grpc": "RendezvousStub",
}


def published_protos():
    """`git ls-files '*.proto'`, grouped by the root each is compiled from."""
    out = subprocess.run(["git", "ls-files", "*.proto"], cwd=REPO, capture_output=True,
                         text=True, check=True)
    files = out.stdout.split()
    assert files, "git ls-files found no .proto file"
    groups = {root: [] for root in ROOTS}
    for path in files:
        root = next((r for r in ROOTS if path.startswith(r + "/")), None)
        assert root is not None, f"{path} is under none of {ROOTS}: add its root here"
        groups[root].append(path[len(root) + 1:])
    return groups


def protoc(include, out, *files):
    """`python -m grpc_tools.protoc` with the Python and gRPC plugins; its output on failure."""
    done = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{include}", f"--python_out={out}",
         f"--grpc_python_out={out}", *files],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, (
        f"protoc refused {' '.join(files)} (from {include}): {done.stdout}{done.stderr}"
    )


def test_every_published_proto_compiles_with_protoc(tmp_path):
    groups = published_protos()
    out = tmp_path / "stubs"
    out.mkdir()
    for root, files in groups.items():
        assert files, f"no .proto file under {root}"
        protoc(REPO / root, out, *files)
    modules = []
    for files in groups.values():
        for name in files:
            module = name[: -len(".proto")].replace("/", ".")
            modules += [f"{module}_pb2", f"{module}_pb2_grpc"]
    # The generated packages (`tensorflow`, `tfcluster`) share their names with installed
    # ones: each gets an __init__.py, and they are imported in an interpreter of their own
    # with the stubs first on its path, so the generated ones are found (and TensorFlow's
    # own messages never meet ours in one descriptor pool).
    for package in {m.split(".")[0] for m in modules}:
        (out / package / "__init__.py").touch()
    check = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(out)!r})\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"for name, stub in {STUBS!r}.items():\n"
        "    module = importlib.import_module(name)\n"
        "    assert module.__file__.startswith(sys.path[0]), module.__file__\n"
        "    getattr(module, stub)\n"
        "from tensorflow import cluster_pb2\n"
        "spec = cluster_pb2.ClusterDef(job=[cluster_pb2.JobDef(name='worker',"
        " tasks={0: 'h:1'})])\n"
        "print(spec.SerializeToString().hex())\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # ClusterDef{job: [JobDef{name: "worker", tasks: {0: "h:1"}}]}, as TensorFlow's own
    # `tensorflow.core.protobuf.cluster_pb2` encodes it.
    assert done.stdout.strip() == "0a110a06776f726b6572120708001203683a31", done.stdout


def start_rendezvous():
    """`tfcluster rendezvous serve` on a free loopback port; the process and `HOST:PORT`."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    server = subprocess.Popen(
        [str(VENV_BIN / "tfcluster"), "rendezvous", "serve", "--listen", "127.0.0.1:0",
         "--rdzv-timeout", "60s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    prefix = b"serving the rendezvous on "
    seen = b""
    deadline = time.monotonic() + 30
    with selectors.DefaultSelector() as selector:
        selector.register(server.stdout, selectors.EVENT_READ)
        while b"\n" not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                server.kill()
                pytest.fail(f"the rendezvous did not say where it serves in 30 s: {seen!r} "
                            f"{server.communicate()[1]!r}")
            chunk = os.read(server.stdout.fileno(), 4096)
            if not chunk:
                pytest.fail(f"the rendezvous exited ({server.wait()}): "
                            f"{server.stderr.read()!r}")
            seen += chunk
    line = seen.split(b"\n")[0]
    assert line.startswith(prefix), line
    return server, line[len(prefix):].decode()


def test_a_client_generated_by_protoc_joins_waits_and_asks_the_job_status(tmp_path,
                                                                            monkeypatch):
    import grpc

    # Compiled from the file's own directory, so the modules are `rendezvous_pb2` and
    # `rendezvous_pb2_grpc`, not `tfcluster.*` beside the installed package of that name.
    protoc(REPO / "elastic/proto/tfcluster", tmp_path, "rendezvous.proto")
    monkeypatch.syspath_prepend(str(tmp_path))
    import rendezvous_pb2 as pb
    import rendezvous_pb2_grpc as pb_grpc

    server, address = start_rendezvous()
    try:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.RendezvousStub(channel)
            config = pb.JobConfig(min_nodes=1, max_nodes=1, tasks_per_node=1)
            port = 23456
            joined = stub.Join(pb.JoinRequest(rdzv_id="protoc", config=config,
                                              host="127.0.0.1", ports=[port], name="py"),
                               timeout=30)
            assert joined.node_id
            assert joined.round == 1
            assert joined.host == "127.0.0.1"
            assert joined.heartbeat_timeout_ms == 60_000
            # Drawn by the rendezvous (the Join brought none): every later call carries it.
            assert joined.node_secret
            secret = [("tfcluster-node-secret", joined.node_secret)]

            waited = stub.WaitRound(pb.WaitRoundRequest(rdzv_id="protoc",
                                                        node_id=joined.node_id,
                                                        poll_ms=20_000),
                                    metadata=secret, timeout=30)
            assert waited.WhichOneof("outcome") == "round", waited
            round_ = waited.round
            assert round_.number == 1
            assert round_.rank == 0
            assert round_.restart_count == 0
            # The fields a client left 0 are their defaults, which the rendezvous writes out.
            defaults = pb.JobConfig(max_task_restarts=10, bad_host_failures=3,
                                    bad_host_window_ms=600_000, bad_host_cooldown_ms=300_000)
            agreed = pb.JobConfig()
            agreed.CopyFrom(config)
            agreed.MergeFrom(defaults)
            assert round_.config == agreed
            assert [(m.node_id, m.host, list(m.ports), m.name) for m in round_.members] == [
                (joined.node_id, "127.0.0.1", [port], "py")]
            assert json.loads(round_.cluster_json) == {"worker": [f"127.0.0.1:{port}"]}

            status = stub.JobStatus(pb.JobStatusRequest(rdzv_id="protoc"), timeout=30)
            assert isinstance(status, pb.JobStatusResponse)
            assert status.rdzv_id == "protoc"
            assert status.job == round_.job != 0
            assert status.config == agreed
            assert status.WhichOneof("phase") == "running", status
            assert status.running.number == 1
            assert [m.node_id for m in status.running.members] == [joined.node_id]
            assert status.rounds_formed == 1
            assert status.restart_count == 0
            assert status.heartbeat_timeout_ms == 60_000
            assert status.digest != 0
            [node] = status.nodes
            assert (node.node_id, node.host, node.name, list(node.ports)) == (
                joined.node_id, "127.0.0.1", "py", [port])
            assert node.WhichOneof("state") == "rank" and node.rank == 0
            assert not node.late

            listed = stub.ListJobs(pb.ListJobsRequest(), timeout=30)
            assert [(j.rdzv_id, j.phase, j.round, j.nodes) for j in listed.jobs] == [
                ("protoc", "running", 1, 1)]
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
