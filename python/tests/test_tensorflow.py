"""tfcluster's resolvers beside TensorFlow 2.21's own, in the same environment: equal where
TensorFlow is right, and our documented differences where it is not. And `tfcluster.tf`'s
classes as TensorFlow's strategies use them."""

import json
import subprocess
import sys

import pytest
import tensorflow as tf

import tfcluster
import tfcluster.tf
from conftest import slurm_step

TF = tf.distribute.cluster_resolver
from tensorflow.python.distribute.cluster_resolver.sagemaker_cluster_resolver import (  # noqa: E402
    SageMakerClusterResolver as TFSageMaker,
)


def view(resolver, *master_args):
    """What a strategy reads of a resolver; cluster_spec() first (TF's Slurm resolver knows
    its task only after it)."""
    cluster = resolver.cluster_spec().as_dict()
    return {
        "cluster": cluster,
        "task": (resolver.task_type, resolver.task_id),
        "rpc_layer": resolver.rpc_layer,
        "master": resolver.master(*master_args),
    }


TF_CONFIGS = [
    {"cluster": {"worker": ["w0:2222", "w1:2222"]}, "task": {"type": "worker", "index": 0}},
    {"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]},
     "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"},
    {"cluster": {"ps": {"3": "p3:2222"}, "worker": ["w0:2222"]},
     "task": {"type": "ps", "index": 3}, "rpc_layer": "grpc"},
    {"cluster": {"chief": ["[::1]:2222"], "evaluator": ["e:1"]},
     "task": {"type": "evaluator", "index": 0}},
    {"cluster": {"worker": ["w0:2222"]}},
]


@pytest.mark.parametrize("document", TF_CONFIGS)
@pytest.mark.parametrize("master_args", [(), ("worker", 0), ("worker", 0, "http")])
def test_tf_config_agrees_with_tensorflow(env, document, master_args):
    env.set(TF_CONFIG=json.dumps(document))
    try:
        theirs = view(TF.TFConfigClusterResolver(), *master_args)
    except ValueError as e:
        # TensorFlow's ValueError (no such job) is ours too.
        with pytest.raises(ValueError) as ours:
            view(tfcluster.tf.TFConfigClusterResolver(), *master_args)
        assert "No such job in cluster" in str(e) and "No such job in cluster" in str(ours.value)
        return
    assert view(tfcluster.tf.TFConfigClusterResolver(), *master_args) == theirs
    assert view(tfcluster.TFConfigClusterResolver(), *master_args) == theirs


def test_tf_config_overrides_agree_with_tensorflow(env):
    env.set(TF_CONFIG=json.dumps(TF_CONFIGS[1]))
    args = dict(task_type="chief", task_id=0, rpc_layer="grpc+verbs")
    assert view(tfcluster.tf.TFConfigClusterResolver(**args)) == view(TF.TFConfigClusterResolver(**args))


@pytest.mark.parametrize("current", ["algo-1", "algo-2", "algo-3"])
def test_sagemaker_agrees_with_tensorflow(env, current):
    env.set(SM_HOSTS='["algo-1", "algo-2", "algo-3"]', SM_CURRENT_HOST=current)
    for args in ({}, {"port": 7777, "rpc_layer": "grpc"}):
        assert view(tfcluster.tf.SageMakerClusterResolver(**args)) == view(TFSageMaker(**args))


@pytest.mark.parametrize("index", ["0", "1", "2", "3"])
def test_kubernetes_indexed_job_agrees_with_tensorflow(env, index):
    # TensorFlow has no such resolver: ours, as a strategy reads it, equals TensorFlow's
    # TFConfigClusterResolver reading the TF_CONFIG the same pod resolves to.
    env.set(JOB_COMPLETION_INDEX=index, HOSTNAME=f"train-{index}", TFCLUSTER_K8S_COMPLETIONS="4",
            TFCLUSTER_K8S_SUBDOMAIN="train", TFCLUSTER_K8S_LAYOUT="chief=1,ps=1")
    ours = tfcluster.tf.KubernetesIndexedJobClusterResolver()
    config = {"cluster": ours.cluster_spec().as_dict(),
              "task": {"type": ours.task_type, "index": ours.task_id}, "rpc_layer": "grpc"}
    env.set(TF_CONFIG=json.dumps(config))
    assert view(ours) == view(TF.TFConfigClusterResolver())


# Steps with one bracket group and block distribution, each rank on the node srun put it.
SLURM_STEPS = [
    ("n[1-3]", "1(x3)", ["n1", "n2", "n3"]),
    ("n[1-3]", "2(x3)", ["n1", "n1", "n2", "n2", "n3", "n3"]),
    ("gpu[08-10]", "2,1,1", ["gpu08", "gpu08", "gpu09", "gpu10"]),
    ("node[1-2]", "2(x2)", ["node1", "node1", "node2", "node2"]),
]


@pytest.mark.parametrize("nodelist, tasks_per_node, nodes", SLURM_STEPS)
def test_slurm_agrees_with_tensorflow_on_one_bracket_group(env, nodelist, tasks_per_node, nodes):
    for rank in range(len(nodes)):
        slurm_step(env, nodelist, tasks_per_node, nodes, rank)
        args = dict(gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False)
        theirs = view(TF.SlurmClusterResolver(**args))
        assert view(tfcluster.tf.SlurmClusterResolver(**args)) == theirs, rank
        assert tfcluster.tf.SlurmClusterResolver(**args).num_accelerators() == \
            TF.SlurmClusterResolver(**args).num_accelerators()
        jobs = {"ps": 1, "worker": len(nodes) - 1}
        assert view(tfcluster.tf.SlurmClusterResolver(jobs=jobs, **args)) == \
            view(TF.SlurmClusterResolver(jobs=jobs, **args)), rank


def test_difference_ten_or_more_nodes_are_not_ordered_as_strings(env):
    # srun -N12 -n12: rank r runs on n(r+1). TensorFlow sorts the hosts as strings, so its
    # rank 1 is n10 and rank 9 is n2: each gets another node's address.
    nodes = [f"n{i}" for i in range(1, 13)]
    slurm_step(env, "n[1-12]", "1(x12)", nodes, rank=1)
    args = dict(gpus_per_node=1, gpus_per_task=1, auto_set_gpu=False)
    ours = view(tfcluster.tf.SlurmClusterResolver(**args))
    theirs = view(TF.SlurmClusterResolver(**args))
    assert ours["cluster"]["worker"] == [f"n{i}:8888" for i in range(1, 13)]
    assert ours["master"] == "grpc://n2:8888"
    assert theirs["cluster"]["worker"][:4] == ["n1:8888", "n10:8888", "n11:8888", "n12:8888"]
    assert theirs["master"] == "grpc://n10:8888"


def test_difference_cyclic_distribution(env):
    # srun -N3 -n5 --distribution=cyclic: ranks 0..4 on n1, n2, n3, n1, n2.
    nodes = ["n1", "n2", "n3", "n1", "n2"]
    slurm_step(env, "n[1-3]", "2(x2),1", nodes, rank=1, distribution="cyclic")
    args = dict(gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False)
    ours = view(tfcluster.tf.SlurmClusterResolver(**args))
    theirs = view(TF.SlurmClusterResolver(**args))
    assert ours["master"] == "grpc://n2:8888"
    assert ours["cluster"]["worker"] == ["n1:8888", "n2:8888", "n3:8888", "n1:8889", "n2:8889"]
    assert theirs["master"] == "grpc://n1:8889"  # rank 1 runs on n2, not n1


def test_difference_several_bracket_groups(env):
    nodes = ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    slurm_step(env, "rack[1-2]-n[1-2]", "1(x4)", nodes, rank=2)
    args = dict(gpus_per_node=1, gpus_per_task=1, auto_set_gpu=False)
    assert view(tfcluster.tf.SlurmClusterResolver(**args))["master"] == "grpc://rack2-n1:8888"
    with pytest.raises(ValueError, match="Invalid hostlist format"):
        TF.SlurmClusterResolver(**args).cluster_spec()


def test_difference_empty_cuda_visible_devices_is_no_gpu(env):
    slurm_step(env, "n[1-2]", "2(x2)", ["n1", "n1", "n2", "n2"], rank=1)
    env.set(CUDA_VISIBLE_DEVICES="")
    # TensorFlow counts "" as one GPU, shares it among 2 tasks as 0 each, then fails on
    # range(0, 1, 0).
    with pytest.raises(ValueError, match="must not be zero"):
        TF.SlurmClusterResolver(auto_set_gpu=False).cluster_spec()
    ours = tfcluster.tf.SlurmClusterResolver()
    assert ours.cluster_spec().as_dict() == {"worker": ["n1:8888", "n1:8889", "n2:8888", "n2:8889"]}
    assert ours.num_accelerators() == {}


def test_slurm_errors_are_runtime_errors_with_our_message(env):
    slurm_step(env, "n[1-2]", "2(x2)", ["n1", "n1", "n2", "n2"], rank=0)
    with pytest.raises(RuntimeError) as raised:
        tfcluster.tf.SlurmClusterResolver(jobs={"worker": 9}, gpus_per_node=0).cluster_spec()
    assert "9" in str(raised.value) and "4" in str(raised.value), raised.value


def test_the_classes_are_tensorflow_cluster_resolvers(env):
    env.set(TF_CONFIG=json.dumps(TF_CONFIGS[1]))
    resolver = tfcluster.tf.TFConfigClusterResolver()
    assert isinstance(resolver, TF.ClusterResolver)
    spec = resolver.cluster_spec()
    assert isinstance(spec, tf.train.ClusterSpec)
    # Our ClusterDef bytes decode to TensorFlow's own ClusterDef of the same cluster.
    ours = tfcluster.ClusterSpec(spec.as_dict()).as_cluster_def()
    assert tf.train.ClusterDef.FromString(ours) == spec.as_cluster_def()
    assert tfcluster.ClusterSpec(spec) == tfcluster.ClusterSpec(spec.as_dict())
    theirs = TF.TFConfigClusterResolver()
    # The constructor's environment, None when not given, as TensorFlow's.
    assert (resolver.environment, theirs.environment) == (None, None)
    assert tfcluster.tf.TFConfigClusterResolver(environment="google").environment == "google"
    assert TF.TFConfigClusterResolver(environment="google").environment == "google"
    # TensorFlow's base class counts this process's accelerators, for TF_CONFIG as for theirs.
    assert resolver.num_accelerators() == theirs.num_accelerators()
    detected = tfcluster.tf.auto_detect()
    assert isinstance(detected, TF.ClusterResolver)
    assert tfcluster.auto_detect().source == "TF_CONFIG"
    assert view(detected) == view(theirs)


def test_help_explains_the_slurm_resolver():
    text = subprocess.run(
        [sys.executable, "-c", "import tfcluster.tf; help(tfcluster.tf.SlurmClusterResolver)"],
        capture_output=True, text=True, check=True, env={"PAGER": "cat", "TERM": "dumb"},
    ).stdout
    assert "as Slurm placed its ranks" in text
    assert "MultiWorkerMirroredStrategy(cluster_resolver=SlurmClusterResolver())" in text
    assert "n10" in text and "cyclic" in text
    module = subprocess.run(
        [sys.executable, "-c", "import tfcluster.tf; help(tfcluster.tf)"],
        capture_output=True, text=True, check=True, env={"PAGER": "cat", "TERM": "dumb"},
    ).stdout
    assert "Differences from TensorFlow 2.21" in module, module
    assert "puts the rank's back" in module and "RuntimeError" in module


def test_mwms_accepts_our_resolver_in_process(env):
    # One worker: the strategy starts its server on the resolver's address, as with TF's.
    env.set(TF_CONFIG='{"cluster": {"worker": ["localhost:0"]}, "task": {"type": "worker", "index": 0}}')
    code = (
        "import tensorflow as tf, tfcluster.tf\n"
        "r = tfcluster.tf.TFConfigClusterResolver()\n"
        "s = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=r)\n"
        "print(s.num_replicas_in_sync, s.cluster_resolver is r)\n"
    )
    import os
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["1", "True"], out.stdout
