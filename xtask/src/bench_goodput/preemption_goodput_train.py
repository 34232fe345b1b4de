"""The training `cargo xtask bench-goodput --preemption` runs under `tfcluster run --rdzv`, one
task a host: `goodput_train.py`'s MultiWorkerMirroredStrategy model and marks, but it saves no
checkpoint of its own. TensorFlow's PreemptionCheckpointHandler saves one, at the same step on
every worker, once any of them is told to stop (SIGTERM: the agent's on a cloud's notice, and
on every clean stop of a round); each round restores the chief's latest. A worker that dies
without a SIGTERM (a crash) leaves the job to restore the last save before it.

Marks, as `goodput_train.py`'s: `start` (VALUE: the pid), `imported`, `ready`, `restored`
(VALUE: the step), `restarts` (VALUE: TFCLUSTER_RESTART_COUNT, the job's restarts so far),
`step` (VALUE: the step just ended), `saved` (VALUE: the step the handler saved; the chief,
as it exits).
"""

import os
import sys
import time

ROUND = os.environ.get("TFCLUSTER_ROUND", "0")


def mark(what, value=""):
    print(f"goodput {ROUND} {what} {time.time():.6f} {value}".rstrip(), flush=True)


mark("start", os.getpid())

import tensorflow as tf  # noqa: E402 (the start mark comes first, before the slow import)

mark("imported")

BATCH = 64
ckpt_dir = os.environ["CKPT_DIR"]
step_seconds = float(os.environ.get("STEP_SECONDS", "0.1"))

strategy = tf.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
task_type, task_id = resolver.task_type, resolver.task_id
is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0)
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]), aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    b = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
step = tf.Variable(0, dtype=tf.int64)
mark("ready")

# Only the chief's copy is kept, and every worker restores it (the handler would restore each
# worker's own directory, which a worker new to the job does not have); a worker's old copy
# goes so that the handler finds none there. As the tests' preemption_train.py does.
checkpoint = tf.train.Checkpoint(w=w, b=b, step=step)
write_dir = ckpt_dir if is_chief else os.path.join(ckpt_dir, f"scratch-{task_type}-{task_id}")
if not is_chief and tf.io.gfile.exists(write_dir):
    tf.io.gfile.rmtree(write_dir)
latest = tf.train.latest_checkpoint(ckpt_dir)
if latest:
    checkpoint.restore(latest)
manager = tf.train.CheckpointManager(checkpoint, directory=write_dir, max_to_keep=1)


def saved_and_exit():
    if is_chief:
        mark("saved", int(step.numpy()))
    sys.exit(42)


handler = tf.distribute.experimental.PreemptionCheckpointHandler(
    resolver,
    manager,
    termination_config=tf.distribute.experimental.TerminationConfig(exit_fn=saved_and_exit),
)
mark("restored", int(step.numpy()))
mark("restarts", os.environ.get("TFCLUSTER_RESTART_COUNT", "0"))

w_true = tf.constant([[1.0], [-2.0], [3.0], [0.5]])
rng = tf.random.Generator.from_seed(1000 * int(ROUND) + task_id)


@tf.function
def train_step(x, y):
    def replica_fn(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        grads = tape.gradient(loss, [w, b])
        grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        w.assign_sub(0.01 * grads[0])
        b.assign_sub(0.01 * grads[1])

    strategy.run(replica_fn, args=(x, y))
    step.assign_add(1)


while True:
    x = rng.normal([BATCH, 4])
    handler.run(train_step, x, tf.matmul(x, w_true) + 0.5)
    time.sleep(step_seconds)
    mark("step", int(step.numpy()))
