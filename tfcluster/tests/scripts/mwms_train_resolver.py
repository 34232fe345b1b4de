"""mwms_train.py's training, with the strategy's cluster from a tfcluster resolver.

`python mwms_train_resolver.py [slurm|tf_config|auto]` builds
`tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=R)` with R one of `tfcluster.tf`'s
resolvers (default `SlurmClusterResolver()`, as `srun -N3 -n3 python mwms_train_resolver.py`
runs it), so nothing but the resolver tells TensorFlow its cluster: no TF_CONFIG on Slurm.
The task each rank must be is what the launcher says (`SLURM_PROCID` for a worker on Slurm,
TF_CONFIG's task under `tfcluster run --local`), and the cluster the one the resolver gave.
"""

import json
import os
import sys
import time

import tensorflow as tf

import tfcluster.tf
from mwms_train import train

started = time.monotonic()
kind = sys.argv[1] if len(sys.argv) > 1 else "slurm"
resolver = {
    "slurm": tfcluster.tf.SlurmClusterResolver,
    "tf_config": tfcluster.tf.TFConfigClusterResolver,
    "auto": tfcluster.tf.auto_detect,
}[kind]()
assert isinstance(resolver, tf.distribute.cluster_resolver.ClusterResolver), type(resolver)
if "SLURM_PROCID" in os.environ and "TF_CONFIG" not in os.environ:
    expected = ("worker", int(os.environ["SLURM_PROCID"]))
else:
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    expected = (task["type"], task["index"])
print(f"resolver {resolver!r} master {resolver.master()}", flush=True)
strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
assert strategy.cluster_resolver is resolver
train(strategy, resolver.cluster_spec().as_dict(), expected, started)
