"""ParameterServerStrategy's coordinator loop that saves when its host is about to go: the
guide's example (docs/guide/launching.md, "Preemption and maintenance notices"), whose loop is
this file's last part, word for word.

Workers and parameter servers serve until they are stopped. The chief restores the latest
checkpoint in `$CKPT_DIR` (printing `restored step N`), schedules steps in chunks of ten
(printing `step N` after each) until `$STEPS`, and on SIGTERM, which `tfcluster run` sends the
chief alone first (the parameter servers still serve), saves at the step it reached, prints
`saved step N` and exits 42: a planned exit, counted against nothing.
"""

import os
import signal
import sys

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol="grpc",
        start=True,
    )
    server.join()

STEPS = int(os.environ["STEPS"])
strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]))
    step = tf.Variable(0, dtype=tf.int64)


@tf.function
def train_step():
    def replica_fn():
        x = tf.random.normal([64, 4])
        y = tf.matmul(x, tf.constant([[1.0], [-2.0], [3.0], [0.5]]))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        w.assign_sub(0.05 * tape.gradient(loss, w))
        step.assign_add(1)
        return loss

    return strategy.run(replica_fn)


checkpoint = tf.train.Checkpoint(w=w, step=step)
manager = tf.train.CheckpointManager(checkpoint, os.environ["CKPT_DIR"], max_to_keep=2)
if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)
    print(f"restored step {step.numpy()}", flush=True)

# tfcluster stops the chief first, with SIGTERM, while the parameter servers still serve.
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
while step.numpy() < STEPS:
    for _ in range(10):
        coordinator.schedule(train_step)
    coordinator.join()
    print(f"step {step.numpy()}", flush=True)
    if stopping:
        manager.save(checkpoint_number=step.numpy())
        print(f"saved step {step.numpy()}", flush=True)
        sys.exit(42)  # a planned exit: no restart counted
