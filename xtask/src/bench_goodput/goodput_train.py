"""The training `cargo xtask bench-goodput` runs under `tfcluster run --rdzv`, one task a host.

MultiWorkerMirroredStrategy over however many workers the round has, a linear model, a step
of about STEP_SECONDS (a sleep after each all-reduced step, as the tests' elastic_train.py
does), a checkpoint every CHECKPOINT_EVERY steps to $CKPT_DIR (shared by every host), restored
at the start of each round; it trains until it is stopped.

Every line it prints is a mark the bench reads, `goodput ROUND WHAT TIME [VALUE]`, TIME being
the wall clock (`time.time()`, which every network namespace of the machine shares):
`start` (VALUE: the pid; printed before `import tensorflow`), `imported`, `ready` (the strategy
built and the variables made, which needs every worker), `restored` (VALUE: the step), `step`
(VALUE: the step just ended; a line a step, which is also the watchdog's progress), `saved`
(VALUE: the step checkpointed; the chief).
"""

import os
import time

ROUND = os.environ.get("TFCLUSTER_ROUND", "0")


def mark(what, value=""):
    print(f"goodput {ROUND} {what} {time.time():.6f} {value}".rstrip(), flush=True)


mark("start", os.getpid())

import json  # noqa: E402

import tensorflow as tf  # noqa: E402 (the start mark comes first, before the slow import)

mark("imported")

CHECKPOINT_EVERY = 10
BATCH = 64
ckpt_dir = os.environ["CKPT_DIR"]
step_seconds = float(os.environ.get("STEP_SECONDS", "0.1"))

tf_config = json.loads(os.environ["TF_CONFIG"])
strategy = tf.distribute.MultiWorkerMirroredStrategy()
task_type = strategy.cluster_resolver.task_type
task_id = strategy.cluster_resolver.task_id
is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0)
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]), aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    b = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
step = tf.Variable(0, dtype=tf.int64)
mark("ready")

# Every worker saves (saving may need them all); only the chief's copy is kept.
checkpoint = tf.train.Checkpoint(w=w, b=b, step=step)
write_dir = ckpt_dir if is_chief else os.path.join(ckpt_dir, f"scratch-{task_type}-{task_id}")
manager = tf.train.CheckpointManager(checkpoint, directory=write_dir, max_to_keep=2)
latest = tf.train.latest_checkpoint(ckpt_dir)
if latest:
    checkpoint.restore(latest).assert_existing_objects_matched()
mark("restored", int(step.numpy()))

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
        return loss

    return strategy.run(replica_fn, args=(x, y))


while True:
    x = rng.normal([BATCH, 4])
    train_step(x, tf.matmul(x, w_true) + 0.5)
    time.sleep(step_seconds)
    done = int(step.assign_add(1).numpy())
    mark("step", done)
    if done % CHECKPOINT_EVERY == 0:
        manager.save()
        if is_chief:
            mark("saved", done)
        else:
            tf.io.gfile.rmtree(write_dir)
