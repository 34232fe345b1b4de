"""A TensorFlow task that serves until it is stopped: its cluster and task from TF_CONFIG.

For the guide's examples that watch a running job (`connect --follow`): the job's tasks must
answer while they watch.
"""

import json
import os

import tensorflow as tf

task = json.loads(os.environ["TF_CONFIG"])
server = tf.distribute.Server(
    task["cluster"], job_name=task["task"]["type"], task_index=task["task"]["index"]
)
print(f"tf_server.py: serving {server.target}", flush=True)
server.join()
