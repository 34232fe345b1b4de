"""MultiWorkerMirroredStrategy with a custom training loop, for `tfcluster run`.

Every worker reads TF_CONFIG (written by the launcher), checks that TensorFlow agrees on its
identity and the replica count, checks that every worker holds the same cluster, and fits a
linear model with its gradients all-reduced across the workers. Keras 3's `fit` is not used:
under this strategy TensorFlow 2.21 fails in it with "unsupported type PerReplica".

`train` is the whole job for a strategy already made; mwms_train_resolver.py makes one from
tfcluster's own resolvers and calls it.

Prints `cluster DIGEST` and `mwms ok TASK ...` lines the tests read; exits non-zero on any
mismatch.
"""

import hashlib
import json
import os
import time

import tensorflow as tf

STEPS = 30
BATCH = 64


def train(strategy, cluster, expected_task, started):
    """Trains under `strategy`, whose resolver must see `cluster` (TF_CONFIG's "cluster" shape)
    and place this process at `expected_task`, `(job, index)`; the time printed runs from
    `started` (`time.monotonic()` before the strategy was made)."""
    resolver = strategy.cluster_resolver
    task = (resolver.task_type, resolver.task_id)
    assert task == expected_task, (task, expected_task)
    workers = len(cluster.get("chief", [])) + len(cluster.get("worker", []))
    assert strategy.num_replicas_in_sync == workers, (strategy.num_replicas_in_sync, workers)

    # The cluster as TensorFlow parsed it, digested; all-gathered so every worker compares its
    # own with everyone else's.
    seen = json.dumps(resolver.cluster_spec().as_dict(), sort_keys=True)
    digest = int(hashlib.sha256(seen.encode()).hexdigest()[:12], 16)
    print(f"cluster {digest:012x}", flush=True)


    @tf.function
    def gather_digests():
        def replica_fn():
            ctx = tf.distribute.get_replica_context()
            return ctx.all_gather(tf.constant([digest], tf.int64), axis=0)

        return strategy.run(replica_fn)


    digests = strategy.experimental_local_results(gather_digests())[0].numpy().tolist()
    assert digests == [digest] * workers, digests

    # y = x . w_true + 0.5; each worker draws its own batches (a different seed per task).
    w_true = tf.constant([[1.0], [-2.0], [3.0], [0.5]])
    rng = tf.random.Generator.from_seed(1000 + resolver.task_id + (100 if task[0] == "chief" else 0))

    with strategy.scope():
        w = tf.Variable(tf.zeros([4, 1]), aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        b = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


    @tf.function
    def train_step(x, y):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            grads = tape.gradient(loss, [w, b])
            ctx = tf.distribute.get_replica_context()
            # The gradients and the loss averaged over every worker: the same update everywhere.
            grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
            w.assign_sub(0.1 * grads[0])
            b.assign_sub(0.1 * grads[1])
            return ctx.all_reduce(tf.distribute.ReduceOp.MEAN, loss)

        return strategy.run(replica_fn, args=(x, y))


    losses = []
    for _ in range(STEPS):
        x = rng.normal([BATCH, 4])
        y = tf.matmul(x, w_true) + 0.5
        losses.append(float(strategy.experimental_local_results(train_step(x, y))[0]))
    assert losses[-1] < losses[0] / 10, losses
    print(
        f"mwms ok {task[0]}:{task[1]} replicas={strategy.num_replicas_in_sync} steps={STEPS} "
        f"loss {losses[0]:.3f} -> {losses[-1]:.4f} in {time.monotonic() - started:.1f}s",
        flush=True,
    )


if __name__ == "__main__":
    started = time.monotonic()
    tf_config = json.loads(os.environ["TF_CONFIG"])
    train(
        tf.distribute.MultiWorkerMirroredStrategy(),
        tf_config["cluster"],
        (tf_config["task"]["type"], tf_config["task"]["index"]),
        started,
    )
