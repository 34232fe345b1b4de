"""MultiWorkerMirroredStrategy training under TensorFlow's PreemptionCheckpointHandler, for
`tfcluster run --rdzv`: it saves no checkpoint of its own, so a later round that restores a
step other than 0 resumes from the checkpoint the handler saved when the workers were told
to stop (SIGTERM, which tfcluster sends with `--grace` on a clean stop).

Environment (besides what the agent sets): CKPT_DIR, a directory every host shares; STEPS,
the step to train to (default 300); STEP_SECONDS, a pause per step (default 0.05).

Prints: `pid PID` at start; `start preloaded=P round=R` (P: 1 when TensorFlow was imported
before the script ran, by a warm interpreter); `restored STEP round=R`; `step STEP` every 10 steps;
`preempted saved STEP round=R` when the handler saved and exits (status 42); `done TASK
workers=N round=R restarts=K restored=STEP`.
"""

import os
import sys
import time

print(f"pid {os.getpid()}", flush=True)
preloaded = int("tensorflow" in sys.modules)
print(f"start preloaded={preloaded} round={os.environ['TFCLUSTER_ROUND']}", flush=True)

import tensorflow as tf  # noqa: E402 (the pid line comes first, before the slow import)

steps = int(os.environ.get("STEPS", "300"))
step_seconds = float(os.environ.get("STEP_SECONDS", "0.05"))
round_number = int(os.environ["TFCLUSTER_ROUND"])
restarts = int(os.environ["TFCLUSTER_RESTART_COUNT"])
ckpt_dir = os.environ["CKPT_DIR"]

strategy = tf.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
task_type, task_id = resolver.task_type, resolver.task_id
is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0)
workers = strategy.num_replicas_in_sync
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]))
step = tf.Variable(0, dtype=tf.int64)
checkpoint = tf.train.Checkpoint(w=w, step=step)
# Only the chief's copy is the real one, as TensorFlow's tutorial does; every worker
# restores it (the handler would restore each worker's own directory, which a worker new to
# the job does not have), and a worker's old copy goes so the handler finds none there.
write_dir = ckpt_dir if is_chief else os.path.join(ckpt_dir, f"scratch-{task_type}-{task_id}")
if not is_chief and tf.io.gfile.exists(write_dir):
    tf.io.gfile.rmtree(write_dir)
latest = tf.train.latest_checkpoint(ckpt_dir)
if latest:
    checkpoint.restore(latest)
manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=1)


def saved_and_exit():
    print(f"preempted saved {int(step.numpy())} round={round_number}", flush=True)
    sys.exit(42)


# The handler saves a checkpoint at the same step on every worker once any of them got
# SIGTERM.
handler = tf.distribute.experimental.PreemptionCheckpointHandler(
    resolver,
    manager,
    termination_config=tf.distribute.experimental.TerminationConfig(exit_fn=saved_and_exit),
)
restored = int(step.numpy())
print(f"restored {restored} round={round_number}", flush=True)
x = tf.random.normal([8, 4])


@tf.function
def train():
    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        w.assign_add(ctx.all_reduce(tf.distribute.ReduceOp.MEAN, tf.reduce_mean(x)) * tf.ones([4, 1]))

    strategy.run(replica_fn)
    step.assign_add(1)


while int(step.numpy()) < steps:
    handler.run(train)
    if int(step.numpy()) % 10 == 0:
        print(f"step {int(step.numpy())}", flush=True)
    time.sleep(step_seconds)
print(
    f"done {task_type}:{task_id} workers={workers} round={round_number} restarts={restarts} "
    f"restored={restored}",
    flush=True,
)
