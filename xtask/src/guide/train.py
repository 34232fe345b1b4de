"""The guide's `train.py`: the smallest TensorFlow program its examples launch.

Finds its cluster as a strategy would (TF_CONFIG through TensorFlow's resolver; in a Slurm
step without TF_CONFIG, tfcluster's own SlurmClusterResolver), prints its task and the cluster's
jobs, and checks TensorFlow agrees with TF_CONFIG. Exits non-zero on a mismatch.
"""

import json
import os

import tensorflow as tf

if "TF_CONFIG" in os.environ:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    assert (resolver.task_type, resolver.task_id) == (task["type"], task["index"]), task
else:
    import tfcluster.tf

    resolver = tfcluster.tf.SlurmClusterResolver()
jobs = {job: len(tasks) for job, tasks in resolver.cluster_spec().as_dict().items()}
print(f"train.py: {resolver.task_type}:{resolver.task_id} of {jobs}", flush=True)
