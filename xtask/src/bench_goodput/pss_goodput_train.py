"""The ParameterServerStrategy training `cargo xtask bench-goodput --pss` runs under `tfcluster
run --rdzv --layout chief=1,ps=2`.

Workers and parameter servers start a `tf.distribute.Server` and serve until stopped. The
chief (the coordinator) builds ParameterServerStrategy with a `ClusterCoordinator`, restores
the latest checkpoint from $CKPT_DIR (shared by every host), and trains until it is stopped:
BATCH steps scheduled at a time, then joined (a step lost with a worker runs again on
another), a checkpoint every CHECKPOINT_EVERY steps.

Every line it prints is a mark the bench reads, `goodput ROUND WHAT TIME [VALUE]`, as
goodput_train.py's: `start` (VALUE: the pid; before `import tensorflow`), `serving` (a worker
or parameter server's server started), `ready` (the chief's coordinator built),
`restored` (VALUE: the step), `step` (VALUE: the steps done so far, after each batch),
`saved` (VALUE: the step checkpointed).
"""

import os
import time

ROUND = os.environ.get("TFCLUSTER_ROUND", "0")


def mark(what, value=""):
    print(f"goodput {ROUND} {what} {time.time():.6f} {value}".rstrip(), flush=True)


mark("start", os.getpid())

import tensorflow as tf  # noqa: E402 (the start mark comes first, before the slow import)

BATCH = 10
CHECKPOINT_EVERY = 50
ROWS = 256

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    mark("serving")
    server.join()

strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    w = tf.Variable(tf.zeros([64, 1]))
    b = tf.Variable(0.0)
    step = tf.Variable(0, dtype=tf.int64)
mark("ready")

ckpt_dir = os.environ["CKPT_DIR"]
checkpoint = tf.train.Checkpoint(w=w, b=b, step=step)
manager = tf.train.CheckpointManager(checkpoint, directory=ckpt_dir, max_to_keep=2)
if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)
mark("restored", int(step.numpy()))

w_true = tf.random.stateless_normal([64, 1], seed=[1, 2])


def dataset_fn():
    x = tf.random.stateless_normal([ROWS * 16, 64], seed=[7, 7])
    y = tf.matmul(x, w_true) + 0.5
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(ROWS)


iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))


@tf.function
def train_step(iterator):
    def replica_fn(x, y):
        # Some work a step, so that a step takes about as long as a small model's.
        for _ in range(20):
            x = tf.tanh(tf.matmul(x, tf.eye(64)))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.01 * gw)
        b.assign_sub(0.01 * gb)
        step.assign_add(1)
        return loss

    return strategy.run(replica_fn, args=next(iterator))


done = int(step.numpy())
while True:
    for _ in range(BATCH):
        coordinator.schedule(train_step, args=(iterator,))
    coordinator.join()
    done += BATCH
    mark("step", done)
    if done % CHECKPOINT_EVERY == 0:
        step.assign(done)
        manager.save(checkpoint_number=done)
        mark("saved", done)
