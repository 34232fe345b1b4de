"""MultiWorkerMirroredStrategy training that survives restarts, for `tfcluster run --rdzv`.

Every worker reads TF_CONFIG (written by the agent), checks that TensorFlow agrees on its
identity and the replica count and that every worker holds the same cluster, restores the
latest checkpoint from $CKPT_DIR (a directory every host shares), and trains a linear model
to STEPS steps with its gradients all-reduced across the workers, checkpointing every
CHECKPOINT_EVERY steps. A restarted round (a task killed, a host lost, a host added) starts
from the last checkpoint, with however many workers it has.

Environment (besides what the agent sets): CKPT_DIR; STEP_SECONDS, a pause per step so that a
test can act mid-training (default 0.1); EXPECT_RESTART_COUNT, when set, the
TFCLUSTER_RESTART_COUNT the finishing round must have, and with it a restored step > 0 when
that count is not 0; EXPECT_WORKERS, when set, how many workers the finishing round must have;
PRINT_STEPS=1, a `step STEP` line from every worker after each step (progress for `--watchdog`).

Prints the lines the tests read: `pid PID` at start; `cluster DIGEST workers=N round=R
restarts=K`; `restored STEP`; `checkpointed STEP round=R` (the chief, after each checkpoint);
`done TASK workers=N round=R restarts=K restored=STEP loss A -> B`. Exits non-zero on any
mismatch.

An `evaluator` task (TensorFlow's side-car evaluation, outside the training cluster) trains
nothing: it prints `evaluator restarts=K`, then `evaluated STEP loss L` for each new
checkpoint of the chief's, and exits 0 once it has evaluated step STEPS.
"""

import hashlib
import json
import os
import time

print(f"pid {os.getpid()}", flush=True)

import tensorflow as tf  # noqa: E402 (the pid line comes first, before the slow import)

STEPS = 60
CHECKPOINT_EVERY = 10
BATCH = 64

ckpt_dir = os.environ["CKPT_DIR"]
step_seconds = float(os.environ.get("STEP_SECONDS", "0.1"))
print_steps = os.environ.get("PRINT_STEPS") == "1"
round_number = int(os.environ["TFCLUSTER_ROUND"])
restarts = int(os.environ["TFCLUSTER_RESTART_COUNT"])

tf_config = json.loads(os.environ["TF_CONFIG"])
cluster = tf_config["cluster"]
W_TRUE = [[1.0], [-2.0], [3.0], [0.5]]

# No tensor before the strategy: MultiWorkerMirroredStrategy configures collectives first.
if tf_config["task"]["type"] == "evaluator":
    print(f"evaluator restarts={restarts}", flush=True)
    w, b, step = tf.Variable(tf.zeros([4, 1])), tf.Variable(0.0), tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(w=w, b=b, step=step)
    x = tf.random.stateless_normal([BATCH, 4], seed=[3, 3])
    y = tf.matmul(x, tf.constant(W_TRUE)) + 0.5
    evaluated = None
    while evaluated is None or int(step.numpy()) < STEPS:
        latest = tf.train.latest_checkpoint(ckpt_dir)
        if latest and latest != evaluated:
            checkpoint.restore(latest).expect_partial()
            loss = float(tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)))
            print(f"evaluated {int(step.numpy())} loss {loss:.4f}", flush=True)
            evaluated = latest
        time.sleep(0.1)
    raise SystemExit(0)

strategy = tf.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
task_type, task_id = resolver.task_type, resolver.task_id
assert (task_type, task_id) == (tf_config["task"]["type"], tf_config["task"]["index"])
workers = len(cluster.get("chief", [])) + len(cluster.get("worker", []))
assert strategy.num_replicas_in_sync == workers, (strategy.num_replicas_in_sync, workers)
is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0 and "chief" not in cluster)

seen = json.dumps(resolver.cluster_spec().as_dict(), sort_keys=True)
digest = int(hashlib.sha256(seen.encode()).hexdigest()[:12], 16)
print(f"cluster {digest:012x} workers={workers} round={round_number} restarts={restarts}", flush=True)


@tf.function
def gather_digests():
    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        return ctx.all_gather(tf.constant([digest], tf.int64), axis=0)

    return strategy.run(replica_fn)


digests = strategy.experimental_local_results(gather_digests())[0].numpy().tolist()
assert digests == [digest] * workers, digests

with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]), aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    b = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
step = tf.Variable(0, dtype=tf.int64)

# Every worker saves (saving may need them all); only the chief's copy is the real one, the
# others write to a directory of their own and remove it, as TensorFlow's tutorial does.
checkpoint = tf.train.Checkpoint(w=w, b=b, step=step)
write_dir = ckpt_dir if is_chief else os.path.join(ckpt_dir, f"scratch-{task_type}-{task_id}")
manager = tf.train.CheckpointManager(checkpoint, directory=write_dir, max_to_keep=2)
latest = tf.train.latest_checkpoint(ckpt_dir)
if latest:
    checkpoint.restore(latest).assert_existing_objects_matched()
restored = int(step.numpy())
print(f"restored {restored}", flush=True)

w_true = tf.constant(W_TRUE)
# Each worker draws its own batches; a restarted round draws new ones.
rng = tf.random.Generator.from_seed(1000 * round_number + 10 * task_id + (5 if task_type == "chief" else 0))


@tf.function
def train_step(x, y):
    def replica_fn(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        grads = tape.gradient(loss, [w, b])
        ctx = tf.distribute.get_replica_context()
        grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        w.assign_sub(0.1 * grads[0])
        b.assign_sub(0.1 * grads[1])
        return ctx.all_reduce(tf.distribute.ReduceOp.MEAN, loss)

    return strategy.run(replica_fn, args=(x, y))


losses = []
while int(step.numpy()) < STEPS:
    x = rng.normal([BATCH, 4])
    y = tf.matmul(x, w_true) + 0.5
    losses.append(float(strategy.experimental_local_results(train_step(x, y))[0]))
    step.assign_add(1)
    if print_steps:
        print(f"step {int(step.numpy())}", flush=True)
    if int(step.numpy()) % CHECKPOINT_EVERY == 0:
        manager.save()
        if is_chief:
            print(f"checkpointed {int(step.numpy())} round={round_number}", flush=True)
        else:
            tf.io.gfile.rmtree(write_dir)
    time.sleep(step_seconds)

assert losses and losses[-1] < 1e-2, losses
expected = os.environ.get("EXPECT_RESTART_COUNT")
if expected is not None:
    assert restarts == int(expected), f"TFCLUSTER_RESTART_COUNT={restarts}, expected {expected}"
    assert restarts == 0 or restored > 0, f"round {round_number} restored step {restored}"
expected = os.environ.get("EXPECT_WORKERS")
if expected is not None:
    assert workers == int(expected), f"{workers} workers, expected {expected}"
print(
    f"done {task_type}:{task_id} workers={workers} round={round_number} restarts={restarts} "
    f"restored={restored} loss {losses[0]:.3f} -> {losses[-1]:.5f}",
    flush=True,
)
