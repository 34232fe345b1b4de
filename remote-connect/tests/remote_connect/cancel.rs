//! Cancel safety of `Context`: a `connect_to_cluster` or `update_server_def` future dropped at
//! any instant leaves the context on the old cluster or the new one, never a mix, and
//! `check_alive` answers while a slow reconnect holds the context's lock.

use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use remote_connect::{ConnectOptions, Context, TaskHealth, TaskId};

use crate::cluster::{fast, lock_held, servers, shutdown_all, silent};

/// What the context shows of its cluster, each part read on its own.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    context_id: u64,
    view_id: u64,
    /// The remote tasks' addresses, in task order.
    remotes: Vec<String>,
}

/// Reads the context and checks that its parts agree with one another: the remote tasks, the
/// cluster spec it reports and its device list are of one cluster.
fn seen(ctx: &Context) -> Seen {
    let remotes: Vec<String> = ctx.remote_tasks().into_iter().map(|(_, a)| a).collect();
    let local = ctx.local_address().expect("connected");
    let spec = ctx.cluster_spec().expect("connected");
    let mut in_spec: Vec<String> = Vec::new();
    for job in spec.jobs() {
        for address in spec.job_tasks(job).unwrap().into_iter().flatten() {
            if address != local {
                in_spec.push(address.to_owned());
            }
        }
    }
    let mut sorted = remotes.clone();
    sorted.sort();
    in_spec.sort();
    assert_eq!(sorted, in_spec, "remote tasks and cluster spec disagree");
    // One CPU per task, this process's included.
    assert_eq!(ctx.list_logical_devices().len(), remotes.len() + 1);
    Seen {
        context_id: ctx.context_id(),
        view_id: ctx.context_view_id(),
        remotes,
    }
}

fn worker_spec(addresses: &[String]) -> ClusterSpec {
    ClusterSpec::builder()
        .job("worker", addresses.to_vec())
        .build()
        .unwrap()
}

/// Whether the new cluster shows after `op` from `before` to `target` (checked to be one of
/// the two whole).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    /// `connect_to_cluster` with another cluster: a full reset.
    Reset,
    /// `update_server_def`: the same context at the next view.
    Update,
}

async fn run(
    ctx: &Context,
    op: Op,
    target: ClusterSpec,
    options: ConnectOptions,
) -> Result<(), remote_connect::Error> {
    match op {
        Op::Reset => ctx.connect_to_cluster(target, options).await,
        Op::Update => ctx.update_server_def(target, options).await,
    }
}

/// Drops `op` futures after waits from zero up, switching between two clusters, and checks
/// after each that the context shows the old cluster or the new one whole, and answers
/// `check_alive`.
async fn drop_at_many_instants(op: Op) {
    let (_, servers) = servers(&[("worker", 3)]).await;
    let addresses: Vec<String> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    let small = addresses[..2].to_vec();
    let ctx = Context::new();
    ctx.connect_to_cluster(worker_spec(&small), fast())
        .await
        .unwrap();
    let (mut dropped, mut finished, mut kept_old, mut saw_new) = (0, 0, 0, 0);
    for step in 0..200u64 {
        let before = seen(&ctx);
        let target = if before.remotes == small {
            addresses.clone()
        } else {
            small.clone()
        };
        // From one poll up to about 80 ms, past a whole call on a loaded machine.
        let wait = Duration::from_micros(2 * step * step + 10 * step);
        match tokio::time::timeout(wait, run(&ctx, op, worker_spec(&target), fast())).await {
            Ok(result) => {
                result.unwrap_or_else(|e| panic!("{op:?} at step {step}: {e}"));
                finished += 1;
            }
            Err(_) => dropped += 1,
        }
        let after = seen(&ctx);
        if after == before {
            kept_old += 1;
        } else {
            saw_new += 1;
            assert_eq!(
                after.remotes, target,
                "step {step}: {before:?} -> {after:?}"
            );
            match op {
                Op::Reset => {
                    assert_ne!(after.context_id, before.context_id, "step {step}");
                    assert_eq!(after.view_id, 0, "step {step}");
                }
                Op::Update => {
                    assert_eq!(after.context_id, before.context_id, "step {step}");
                    assert_eq!(after.view_id, before.view_id + 1, "step {step}");
                }
            }
        }
        // The context answers at once, whatever was dropped.
        let task = ctx.remote_tasks()[0].0.clone();
        let health = tokio::time::timeout(Duration::from_secs(2), ctx.check_alive(&task))
            .await
            .expect("check_alive answers")
            .unwrap();
        if op == Op::Reset {
            // A dropped reset leaves the old context untouched on every task.
            assert_eq!(health, TaskHealth::Alive, "step {step}");
        }
        if finished >= 3 && dropped >= 40 {
            break;
        }
    }
    assert!(dropped >= 20, "only {dropped} dropped");
    assert!(
        finished >= 1,
        "none finished ({saw_new} showed the new cluster)"
    );
    assert!(kept_old >= 10, "{kept_old} kept the old cluster");

    // Whatever the dropped calls left on the tasks, one more call to completion brings every
    // task of the cluster to the context's id and view, and leaves none outside it with the
    // context; closing then closes it everywhere.
    let target = if seen(&ctx).remotes == small {
        addresses.clone()
    } else {
        small.clone()
    };
    run(&ctx, op, worker_spec(&target), fast()).await.unwrap();
    let now = seen(&ctx);
    for (server, address) in servers.iter().zip(&addresses) {
        if target.contains(address) {
            let contexts: Vec<(u64, u64)> = server
                .contexts()
                .iter()
                .filter(|c| c.id == now.context_id)
                .map(|c| (c.id, c.view_id))
                .collect();
            assert_eq!(contexts, [(now.context_id, now.view_id)], "{address}");
        } else {
            assert!(
                server.contexts().iter().all(|c| c.id != now.context_id),
                "{address} left the cluster but holds its context"
            );
        }
    }
    for task in ctx.remote_tasks() {
        assert_eq!(ctx.check_alive(&task.0).await.unwrap(), TaskHealth::Alive);
    }
    ctx.close().await.unwrap();
    for server in &servers {
        assert!(server.contexts().iter().all(|c| c.id != now.context_id));
    }
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reconnect_leaves_the_old_cluster_or_the_new_one() {
    drop_at_many_instants(Op::Reset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_update_leaves_the_old_cluster_or_the_new_one() {
    drop_at_many_instants(Op::Update).await;
}

/// Starts `op` to the cluster plus a task that never answers, and checks that `check_alive`
/// and the listings answer for the old cluster while it holds the context's lock.
async fn check_alive_during_slow(op: Op) {
    let (_, servers) = servers(&[("worker", 2)]).await;
    let mut quiet = silent().await;
    let addresses: Vec<String> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    let ctx = Context::new();
    ctx.connect_to_cluster(worker_spec(&addresses), fast())
        .await
        .unwrap();
    let before = seen(&ctx);

    let mut slow = addresses.clone();
    slow.push(quiet.addr.to_string());
    let slow_options = ConnectOptions::default()
        .with_rpc_timeout(Duration::from_secs(3))
        .with_timeout(Duration::from_secs(4));
    let reconnect = tokio::spawn({
        let ctx = ctx.clone();
        async move {
            let started = Instant::now();
            let result = run(&ctx, op, worker_spec(&slow), slow_options).await;
            (result, started.elapsed())
        }
    });
    // It dials the silent task under the lock, and waits there for its 3 s deadline.
    quiet.dialed().await;
    assert!(lock_held(&ctx), "the slow {op:?} does not hold the lock");
    let worker0 = TaskId::new("worker", 0);
    let health = ctx.check_alive(&worker0).await.unwrap();
    // Answered while the slow call still held the lock: it did not wait for it.
    assert!(
        lock_held(&ctx),
        "check_alive answered only after the slow {op:?} let go of the lock"
    );
    assert_eq!(health, TaskHealth::Alive);
    assert_eq!(seen(&ctx), before);

    let (result, took) = reconnect.await.unwrap();
    assert!(took >= Duration::from_secs(2), "{took:?}");
    result.unwrap_err();
    match op {
        // A failed reset keeps the old context.
        Op::Reset => assert_eq!(seen(&ctx), before),
        // An update advances the view even when a task fails, as in TensorFlow: the cluster
        // is the new one, its tasks those that took the update.
        Op::Update => {
            let remotes: Vec<String> = ctx.remote_tasks().into_iter().map(|(_, a)| a).collect();
            assert_eq!(
                (ctx.context_id(), ctx.context_view_id(), remotes),
                (before.context_id, before.view_id + 1, before.remotes)
            );
        }
    }
    assert_eq!(ctx.check_alive(&worker0).await.unwrap(), TaskHealth::Alive);
    ctx.close().await.unwrap();
    quiet.task.abort();
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_alive_answers_while_a_slow_reconnect_runs() {
    check_alive_during_slow(Op::Reset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_alive_answers_while_a_slow_update_runs() {
    check_alive_during_slow(Op::Update).await;
}
