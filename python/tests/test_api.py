"""The module's API without TensorFlow: ClusterSpec, hostlists, resolvers, errors."""

import json
import os
import subprocess
import sys
import time

import pytest

import tfcluster
from conftest import slurm_step


def test_import_does_not_import_tensorflow():
    code = "import sys, tfcluster, tfcluster.hostlist; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_version_is_the_crates():
    assert tfcluster.__version__ == "0.1.0"


def test_cluster_spec_from_dict_json_and_itself():
    spec = tfcluster.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {3: "p:2222"}})
    assert spec.jobs == ["worker", "ps"]
    assert spec.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": {3: "p:2222"}}
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("ps") == [3]
    assert spec.task_address("ps", 3) == "p:2222"
    assert spec.job_tasks("ps") == [None, None, None, "p:2222"]
    assert tfcluster.ClusterSpec(spec.to_json()) == spec
    assert tfcluster.ClusterSpec(spec) == spec
    assert tfcluster.ClusterSpec('{"ps": {"3": "p:2222"}, "worker": ["w0:2222", "w1:2222"]}') == spec
    assert repr(spec) == "ClusterSpec({'ps': {3: 'p:2222'}, 'worker': ['w0:2222', 'w1:2222']})"
    assert not tfcluster.ClusterSpec({})
    assert spec


def test_cluster_def_round_trip():
    spec = tfcluster.ClusterSpec({"worker": ["w0:1", "[::1]:2"], "chief": ["c:3"]})
    data = spec.as_cluster_def()
    assert isinstance(data, bytes)
    assert tfcluster.ClusterSpec.from_cluster_def(data) == spec


@pytest.mark.parametrize(
    "cluster, message",
    [
        ({"bad job": ["a:1"]}, 'invalid job name "bad job"'),
        ({"worker": ["no-port"]}, "no-port"),
        ({"worker": ["h:99999"]}, "99999"),
        ('{"worker": [', "invalid cluster JSON at line 1"),
    ],
)
def test_invalid_cluster_spec_is_a_value_error(cluster, message):
    with pytest.raises(ValueError, match=None) as raised:
        tfcluster.ClusterSpec(cluster)
    assert message in str(raised.value)


def test_lookups_of_missing_jobs_and_tasks_are_value_errors():
    spec = tfcluster.ClusterSpec({"worker": ["w0:1"]})
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        spec.num_tasks("ps")
    with pytest.raises(ValueError, match="No task with index 5 in job 'worker'"):
        spec.task_address("worker", 5)
    with pytest.raises(ValueError, match="invalid ClusterDef bytes"):
        tfcluster.ClusterSpec.from_cluster_def(b"\xff\xff")
    with pytest.raises(TypeError):
        tfcluster.ClusterSpec(42)


def test_hostlist():
    assert tfcluster.hostlist.expand("n[009-011],gpu1") == ["n009", "n010", "n011", "gpu1"]
    assert tfcluster.hostlist.expand("rack[1-2]-n[1-2]") == [
        "rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    hosts = [f"n{i}" for i in range(1, 13)] + ["gpu07"]
    assert tfcluster.hostlist.expand(tfcluster.hostlist.compress(hosts)) == hosts
    assert tfcluster.hostlist.compress(["n1", "n2", "n3"]) == "n[1-3]"
    with pytest.raises(ValueError, match=r"n\[1-2"):
        tfcluster.hostlist.expand("n[1-2")


def test_tf_config_resolver(env):
    env.set(TF_CONFIG=json.dumps({
        "cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]},
        "task": {"type": "worker", "index": 1},
        "rpc_layer": "grpc",
    }))
    resolver = tfcluster.TFConfigClusterResolver()
    assert resolver.cluster_spec().as_dict() == {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]}
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 1, "grpc")
    assert resolver.master() == "grpc://w1:2222"
    assert resolver.master("chief", 0, "http") == "http://c0:2222"
    assert resolver.num_accelerators() == {}
    # Overrides, 0 included.
    chief = tfcluster.TFConfigClusterResolver(task_type="worker", task_id=0, environment="google")
    assert (chief.task_type, chief.task_id, chief.environment) == ("worker", 0, "google")


def test_slurm_resolver(env):
    slurm_step(env, "n[1-2]", "2(x2)", ["n1", "n1", "n2", "n2"], rank=2)
    env.set(CUDA_VISIBLE_DEVICES="0,1,2,3")
    resolver = tfcluster.SlurmClusterResolver(auto_set_gpu=False)
    assert resolver.cluster_spec().as_dict() == {
        "worker": ["n1:8888", "n1:8889", "n2:8888", "n2:8889"]}
    assert (resolver.task_type, resolver.task_id) == ("worker", 2)
    assert resolver.get_task_info() == ("worker", 2)
    assert resolver.master() == "grpc://n2:8888"
    assert resolver.num_accelerators() == {"GPU": 2}
    jobs = tfcluster.SlurmClusterResolver(jobs=[("ps", 1), ("worker", 3)], port_base=9000,
                                          auto_set_gpu=False)
    assert jobs.cluster_spec().as_dict() == {"ps": ["n1:9000"], "worker": ["n1:9001", "n2:9000", "n2:9001"]}
    assert (jobs.task_type, jobs.task_id) == ("worker", 1)


def test_slurm_auto_set_gpu_sets_this_process_cuda_visible_devices(env):
    import os

    slurm_step(env, "n[1-2]", "2(x2)", ["n1", "n1", "n2", "n2"], rank=3)
    env.set(CUDA_VISIBLE_DEVICES="0,1,2,3")
    resolver = tfcluster.SlurmClusterResolver()
    assert resolver.cuda_visible_devices() == "2,3"
    resolver.cluster_spec()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_sagemaker_resolver(env):
    env.set(SM_HOSTS='["algo-1", "algo-2", "algo-3"]', SM_CURRENT_HOST="algo-2")
    resolver = tfcluster.SageMakerClusterResolver()
    assert resolver.cluster_spec().as_dict() == {
        "worker": ["algo-1:2223", "algo-2:2223", "algo-3:2223"]}
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)
    assert tfcluster.SageMakerClusterResolver(port=7777).master("worker", 0) == "algo-1:7777"


def test_kubernetes_indexed_job_resolver(env):
    env.set(JOB_COMPLETION_INDEX="1", HOSTNAME="train-1", TFCLUSTER_K8S_COMPLETIONS="3",
            TFCLUSTER_K8S_SUBDOMAIN="train")
    resolver = tfcluster.KubernetesIndexedJobClusterResolver(layout="chief=1")
    assert resolver.cluster_spec().as_dict() == {
        "chief": ["train-0.train:2222"], "worker": ["train-1.train:2222", "train-2.train:2222"]}
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 0, "grpc")
    assert tfcluster.KubernetesIndexedJobClusterResolver(port=7777).master() == \
        "grpc://train-1.train:7777"
    assert tfcluster.auto_detect().source == "Kubernetes Indexed Job"
    env.set(HOSTNAME="train-1-x7k2p")
    with pytest.raises(RuntimeError, match='HOSTNAME="train-1-x7k2p" is invalid'):
        tfcluster.KubernetesIndexedJobClusterResolver().cluster_spec()


def test_auto_detect(env):
    with pytest.raises(RuntimeError, match="no cluster found: TF_CONFIG: not set; Slurm: "):
        tfcluster.auto_detect()
    env.set(SM_HOSTS='["algo-1"]', SM_CURRENT_HOST="algo-1")
    resolver = tfcluster.auto_detect()
    assert resolver.source == "SageMaker"
    assert resolver.cluster_spec().as_dict() == {"worker": ["algo-1:2223"]}
    env.set(TF_CONFIG='{"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0}}')
    assert tfcluster.auto_detect().source == "TF_CONFIG"


def test_an_environment_that_does_not_resolve_is_a_runtime_error(env):
    with pytest.raises(RuntimeError, match="SLURM_PROCID"):
        tfcluster.SlurmClusterResolver().cluster_spec()
    env.set(TF_CONFIG='{"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 1.9}}')
    with pytest.raises(RuntimeError, match="environment variable TF_CONFIG is invalid at line 1"):
        tfcluster.TFConfigClusterResolver().cluster_spec()
    env.set(TF_CONFIG="{not json")
    with pytest.raises(RuntimeError, match="TF_CONFIG"):
        tfcluster.auto_detect()
    env.set(SM_HOSTS='["algo-1"]', SM_CURRENT_HOST="algo-9")
    with pytest.raises(RuntimeError, match="SM_CURRENT_HOST=\"algo-9\" is invalid"):
        tfcluster.SageMakerClusterResolver().cluster_spec()
    # A task the cluster does not have is the caller's input: ValueError, as TensorFlow.
    env.set(TF_CONFIG='{"cluster": {"worker": ["w0:1", "w1:1"]}}')
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        tfcluster.TFConfigClusterResolver().master("ps", 0)


def test_errors_carry_the_whole_chain(env):
    # A Slurm step whose tasks per node do not parse: the resolver's message names the
    # variable and the byte, as the Rust error chain prints it.
    slurm_step(env, "n[1-2]", "2(x2", ["n1", "n1", "n2", "n2"], rank=0)
    with pytest.raises(RuntimeError) as raised:
        tfcluster.SlurmClusterResolver(gpus_per_node=0).cluster_spec()
    assert "2(x2" in str(raised.value)


def test_stubs_and_docs_ship_with_the_package():
    from importlib import resources

    files = {p.name for p in resources.files("tfcluster").iterdir()}
    assert {"_native.pyi", "tf.pyi", "py.typed"} <= files
    assert "Slurm placed" in tfcluster.SlurmClusterResolver.__doc__


def test_progress_is_a_no_op_outside_tfcluster(monkeypatch, tmp_path):
    monkeypatch.delenv("TFCLUSTER_PROGRESS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert tfcluster.progress() is None
    assert list(tmp_path.iterdir()) == []
    # A launcher gone with its file: still nothing raised, nothing made.
    monkeypatch.setenv("TFCLUSTER_PROGRESS_FILE", str(tmp_path / "gone"))
    tfcluster.progress()
    assert list(tmp_path.iterdir()) == []
    assert "progress" in tfcluster.__all__


def test_progress_touches_the_watchdogs_file(monkeypatch, tmp_path):
    beacon = tmp_path / "task-1"
    beacon.touch()
    os.utime(beacon, (0, 0))
    monkeypatch.setenv("TFCLUSTER_PROGRESS_FILE", str(beacon))
    before = time.time()
    tfcluster.progress()
    assert beacon.stat().st_mtime >= before - 1
    assert beacon.read_bytes() == b""


def test_preemption_helpers_say_nothing_outside_tfcluster(monkeypatch, tmp_path):
    monkeypatch.delenv("TFCLUSTER_NOTICE_FILE", raising=False)
    assert tfcluster.preemption_deadline() is None
    assert tfcluster.preemption_watcher()() is False
    # An agent with no notice standing (no file), or a file that is not a notice.
    monkeypatch.setenv("TFCLUSTER_NOTICE_FILE", str(tmp_path / "notice.json"))
    assert tfcluster.preemption_deadline() is None
    (tmp_path / "notice.json").write_text("[1, 2")
    assert tfcluster.preemption_deadline() is None
    assert tfcluster.preemption_watcher()() is False
    assert {"preemption_deadline", "preemption_watcher"} <= set(tfcluster.__all__)


def test_preemption_helpers_read_the_agents_notice(monkeypatch, tmp_path):
    notice = tmp_path / "notice.json"
    monkeypatch.setenv("TFCLUSTER_NOTICE_FILE", str(notice))
    now = time.time()
    shown = {"cloud": "gce", "kind": "preemption", "deadline": now + 30, "act_at": now + 20,
             "detail": "TRUE"}
    notice.write_text(json.dumps(shown))
    assert tfcluster.preemption_deadline() == now + 30
    watcher = tfcluster.preemption_watcher()
    assert watcher() is False, "not before the agent acts"
    notice.write_text(json.dumps(dict(shown, act_at=now - 1)))
    assert watcher() is True
    # A rebalance recommendation: no deadline, nothing to act on.
    notice.write_text(json.dumps(dict(shown, kind="rebalance", deadline=None, act_at=None)))
    assert tfcluster.preemption_deadline() is None
    assert watcher() is False
