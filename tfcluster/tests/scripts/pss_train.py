"""ParameterServerStrategy driven by a ClusterCoordinator, for `tfcluster run`.

Needs a chief, workers and parameter servers in TF_CONFIG (written by the launcher). Workers
and parameter servers start a `tf.distribute.Server` and serve until they are stopped, as
TensorFlow's own examples do; the chief checks that TensorFlow agrees on its identity, places
the variables on the parameter servers, schedules training steps on the workers and waits for
them.

Every task prints `cluster DIGEST` (the tests compare them across tasks), `pid PID` and
`restart count TFCLUSTER_RESTART_COUNT`; the chief prints `pss ok ...` (with its pid and the steps the
parameter servers executed, at least STEPS: a step lost with its worker runs again elsewhere)
and exits non-zero on any mismatch.

With PSS_PAUSE=1, the chief trains half the steps, prints `pss half`, and waits for the file
`$CKPT_DIR/go` before the other half: a test kills a worker meanwhile, and the training must
go on. With PSS_CHECKPOINT=1 too, the chief writes a checkpoint of the variables (in
`$CKPT_DIR/pss`) before `pss half`; a chief that finds one restores it, prints `pss restored
executed=N` (the steps the checkpoint holds), and trains only the second half: a test kills
a parameter server, whose variables are gone, and the launcher restarts the chief with it.
"""

import hashlib
import json
import os
import time

import tensorflow as tf

STEPS = 40
BATCH = 64

started = time.monotonic()
tf_config = json.loads(os.environ["TF_CONFIG"])
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
task = (resolver.task_type, resolver.task_id)
assert task == (tf_config["task"]["type"], tf_config["task"]["index"]), task
seen = json.dumps(resolver.cluster_spec().as_dict(), sort_keys=True)
print(f"cluster {hashlib.sha256(seen.encode()).hexdigest()[:12]}", flush=True)
restart = os.environ.get("TFCLUSTER_RESTART_COUNT", "")
print(f"pid {os.getpid()}", flush=True)
print(f"restart count {restart}", flush=True)

if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"serving {task[0]}:{task[1]}", flush=True)
    server.join()

assert task == ("chief", 0), task
strategy = tf.distribute.ParameterServerStrategy(resolver)
# One replica per worker, none synchronised: TensorFlow reports 1.
assert strategy.num_replicas_in_sync == 1, strategy.num_replicas_in_sync
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
workers = len(tf_config["cluster"]["worker"])
ps = len(tf_config["cluster"]["ps"])

w_true = tf.constant([[1.0], [-2.0], [3.0], [0.5]])
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]))
    b = tf.Variable(0.0)
    executed = tf.Variable(0, dtype=tf.int64)
placed = sorted({w.device, b.device})
assert all("/job:ps/" in d for d in placed), placed


def dataset_fn():
    x = tf.random.stateless_normal([BATCH * STEPS, 4], seed=[7, 7])
    y = tf.matmul(x, w_true) + 0.5
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(BATCH * STEPS).repeat().batch(BATCH)


iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
checkpoint = tf.train.Checkpoint(w=w, b=b, executed=executed)
# CKPT_DIR is read only when the test asks for checkpoints (the guide's example sets none).
checkpoints = os.path.join(os.environ["CKPT_DIR"], "pss") if os.environ.get("PSS_CHECKPOINT") else None
latest = tf.train.latest_checkpoint(checkpoints) if checkpoints else None
if latest:
    checkpoint.restore(latest).assert_consumed()
    assert float(tf.norm(w)) > 0, "restored untrained variables"
    print(f"pss restored executed={executed.numpy()}", flush=True)


@tf.function
def train_step(iterator):
    def replica_fn(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.05 * gw)
        b.assign_sub(0.05 * gb)
        executed.assign_add(1)
        return loss

    return strategy.run(replica_fn, args=next(iterator))


go = os.path.join(os.environ["CKPT_DIR"], "go") if os.environ.get("PSS_PAUSE") else None
first_part = STEPS // 2 if go else STEPS
# A restored chief's first half is in its checkpoint.
trained = 0 if latest else first_part
losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(trained)]
if go:
    coordinator.join()
    if checkpoints and not latest:
        checkpoint.save(os.path.join(checkpoints, "half"))
    print("pss half", flush=True)
    while not os.path.exists(go):
        time.sleep(0.05)
    losses += [coordinator.schedule(train_step, args=(iterator,)) for _ in range(STEPS - first_part)]
coordinator.join()
assert executed.numpy() >= STEPS, executed.numpy()
first, last = losses[0].fetch(), losses[-1].fetch()
# Twenty steps from trained variables need not lower the loss; forty from zero do.
assert latest or last < first, (first, last)
print(
    f"pss ok chief:0 workers={workers} ps={ps} replicas={strategy.num_replicas_in_sync} "
    f"steps={STEPS} executed={executed.numpy()} pid={os.getpid()} "
    f"loss {first:.3f} -> {last:.4f} in {time.monotonic() - started:.1f}s",
    flush=True,
)
