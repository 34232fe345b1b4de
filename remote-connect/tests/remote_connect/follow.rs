//! `Context::follow` against in-process task servers: tasks added, removed and replaced in
//! place, resets by TensorFlow's rule, a change that fails kept off the context and retried,
//! source errors skipped, equal specs ignored, and a follower dropped mid-change.

use std::io;
use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use futures_util::Stream;
use remote_connect::{
    ClusterChange, ConnectOptions, Context, Error, Follow, FollowEvent, FollowOptions, Staleness,
    TaskId,
};
use tokio::sync::{broadcast, mpsc};

use crate::cluster::{dead_addr, fast, lock_held, server, server_at, shutdown_all, silent};

type Item = Result<ClusterSpec, io::Error>;

/// A source of specs the test feeds by hand.
fn source() -> (
    mpsc::UnboundedSender<Item>,
    impl Stream<Item = Item> + Send + 'static,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (tx, stream)
}

/// The next event, within 30 s.
async fn next_event(events: &mut broadcast::Receiver<FollowEvent>) -> FollowEvent {
    tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("no follow event within 30 s")
        .expect("the follow's events ended")
}

/// The next change; source errors on the way (a file read half written) are printed and
/// skipped, anything else fails the test.
pub(crate) async fn next_change(events: &mut broadcast::Receiver<FollowEvent>) -> ClusterChange {
    loop {
        match next_event(events).await {
            FollowEvent::Changed(change) => return change,
            FollowEvent::Source(error) => eprintln!("source: {error}"),
            other => panic!("expected a change, got {other:?}"),
        }
    }
}

fn worker(task: u32) -> TaskId {
    TaskId::new("worker", task)
}

/// Job `worker` with the given tasks, sparse (a task keeps its index when another leaves).
fn workers(tasks: &[(u32, &str)]) -> ClusterSpec {
    ClusterSpec::builder()
        .sparse_job(
            "worker",
            tasks
                .iter()
                .map(|(t, a)| (*t, (*a).to_owned()))
                .collect::<Vec<_>>(),
        )
        .build()
        .unwrap()
}

fn follow_options() -> FollowOptions {
    FollowOptions::new(fast().with_timeout(Duration::from_secs(5)))
        .with_retry(Duration::from_millis(100), Duration::from_millis(400))
}

fn device(task: u32) -> String {
    format!("/job:worker/replica:0/task:{task}/device:CPU:0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_tasks_added_and_removed_in_place() {
    let servers = vec![
        server("worker").await,
        server("worker").await,
        server("worker").await,
    ];
    let a: Vec<String> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    let ctx = Context::new();
    let (tx, changes) = source();
    let follow: Follow = ctx.follow(changes, follow_options());
    let mut events = follow.subscribe();

    tx.send(Ok(workers(&[(0, &a[0]), (1, &a[1])]))).unwrap();
    let first = next_change(&mut events).await;
    assert!(first.reset);
    assert_eq!(first.added, [worker(0), worker(1)]);
    assert_eq!(first.devices, 3, "the local CPU and one per worker");
    let context = ctx.context_id();
    let on_w0 = ctx.device(&device(0)).unwrap();
    let on_w1 = ctx.device(&device(1)).unwrap();

    // A third worker: an update in place, CreateContext on it alone.
    let sent = Instant::now();
    tx.send(Ok(workers(&[(0, &a[0]), (1, &a[1]), (2, &a[2])])))
        .unwrap();
    let added = next_change(&mut events).await;
    let took = sent.elapsed();
    assert!(!added.reset);
    assert_eq!(
        (
            added.added.as_slice(),
            added.removed.len(),
            added.replaced.len()
        ),
        ([worker(2)].as_slice(), 0, 0)
    );
    assert_eq!(
        (added.devices, added.context_id, added.view_id),
        (4, context, 1)
    );
    // Tens of milliseconds; seconds would be a change waiting on something other than its
    // RPCs (a pause, a poll), which 3 s leaves room to catch on a busy machine.
    assert!(took < Duration::from_secs(3), "followed in {took:?}");
    ctx.device(&device(2)).unwrap();
    ctx.device_attributes(&on_w0).unwrap();
    assert_eq!(servers[2].contexts().len(), 1);

    // The same cluster again is no change: the next event is the removal after it.
    tx.send(Ok(workers(&[(2, &a[2]), (0, &a[0]), (1, &a[1])])))
        .unwrap();
    tx.send(Ok(workers(&[(0, &a[0]), (2, &a[2])]))).unwrap();
    let removed = next_change(&mut events).await;
    assert_eq!(removed.removed, [worker(1)]);
    assert!(removed.added.is_empty() && !removed.reset);
    assert_eq!((removed.devices, removed.view_id), (3, 2));
    let stale = ctx.device_attributes(&on_w1).unwrap_err();
    assert!(
        matches!(
            stale,
            Error::StaleDevice {
                cause: Staleness::TaskRemoved,
                ..
            }
        ),
        "{stale}"
    );
    assert!(stale.to_string().contains("its task left"), "{stale}");
    ctx.device_attributes(&on_w0).unwrap();
    // The removed task's context is closed after the change is published.
    let closed_by = Instant::now() + Duration::from_secs(5);
    while !servers[1].contexts().is_empty() {
        assert!(Instant::now() < closed_by, "worker 1 kept its context");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    follow.stop().await;
    ctx.close().await.unwrap();
    shutdown_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_job_resets_and_the_event_says_so() {
    let w0 = server("worker").await;
    let ps = server("ps").await;
    let ctx = Context::new();
    let (tx, changes) = source();
    let follow = ctx.follow(changes, follow_options());
    let mut events = follow.subscribe();
    let w0_address = w0.local_addr().to_string();
    tx.send(Ok(workers(&[(0, &w0_address)]))).unwrap();
    next_change(&mut events).await;
    let handle = ctx.device(&device(0)).unwrap();
    let first = ctx.context_id();

    // Job `ps` sorts before `worker`: every task's job list changes, TensorFlow resets.
    let with_ps = ClusterSpec::builder()
        .job("ps", [ps.local_addr().to_string()])
        .job("worker", [w0_address])
        .build()
        .unwrap();
    tx.send(Ok(with_ps)).unwrap();
    let reset = next_change(&mut events).await;
    assert!(reset.reset);
    assert_eq!(reset.added, [TaskId::new("ps", 0)]);
    assert_ne!(reset.context_id, first);
    let stale = ctx.device_attributes(&handle).unwrap_err();
    assert!(
        matches!(
            stale,
            Error::StaleDevice {
                cause: Staleness::Reset,
                ..
            }
        ),
        "{stale}"
    );
    drop(follow);
    ctx.close().await.unwrap();
    shutdown_all(vec![w0, ps]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_task_leaves_the_last_good_cluster_and_is_retried() {
    let w0 = server("worker").await;
    let w0_address = w0.local_addr().to_string();
    let later = dead_addr();
    let ctx = Context::new();
    let (tx, changes) = source();
    let follow = ctx.follow(changes, follow_options());
    let mut events = follow.subscribe();
    tx.send(Ok(workers(&[(0, &w0_address)]))).unwrap();
    next_change(&mut events).await;
    let before = (ctx.context_id(), ctx.context_view_id(), ctx.remote_tasks());

    tx.send(Ok(workers(&[(0, &w0_address), (1, &later.to_string())])))
        .unwrap();
    let FollowEvent::Failed {
        error, retry_in, ..
    } = next_event(&mut events).await
    else {
        panic!("the unreachable task did not fail the change");
    };
    assert!(
        error
            .to_string()
            .contains("/job:worker/replica:0/task:1 at"),
        "{error}"
    );
    assert_eq!(retry_in, Some(Duration::from_millis(100)));
    assert_eq!(
        (ctx.context_id(), ctx.context_view_id(), ctx.remote_tasks()),
        before,
        "a failed change left the context"
    );
    assert_eq!(w0.contexts()[0].view_id, 0, "worker 0 was moved on");

    // The task comes up: a retry (after the back-off, doubling) applies the change.
    let w1 = server_at("worker", later).await;
    let applied = loop {
        match next_event(&mut events).await {
            FollowEvent::Changed(change) => break change,
            FollowEvent::Failed { retry_in, .. } => {
                assert!(retry_in <= Some(Duration::from_millis(400)), "{retry_in:?}")
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(applied.added, [worker(1)]);
    assert_eq!(applied.view_id, 1);
    drop(follow);
    ctx.close().await.unwrap();
    shutdown_all(vec![w0, w1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_error_is_reported_and_skipped() {
    let w0 = server("worker").await;
    let w0_address = w0.local_addr().to_string();
    let ctx = Context::new();
    let (tx, changes) = source();
    let follow = ctx.follow(changes, follow_options());
    let mut events = follow.subscribe();
    tx.send(Ok(workers(&[(0, &w0_address)]))).unwrap();
    next_change(&mut events).await;
    tx.send(Err(io::Error::other(
        "cluster.json: expected value at line 1",
    )))
    .unwrap();
    let FollowEvent::Source(error) = next_event(&mut events).await else {
        panic!("no source error");
    };
    assert_eq!(error.to_string(), "cluster.json: expected value at line 1");
    assert_eq!(ctx.remote_tasks().len(), 1);

    // The stream ending ends following; the context stays connected.
    drop(tx);
    let ended = Instant::now() + Duration::from_secs(5);
    while !follow.is_finished() {
        assert!(
            Instant::now() < ended,
            "following did not end with its source"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ctx.remote_tasks().len(), 1);
    ctx.close().await.unwrap();
    shutdown_all(vec![w0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_follow_mid_change_leaves_the_context_whole() {
    let w0 = server("worker").await;
    let w0_address = w0.local_addr().to_string();
    let mut quiet = silent().await;
    let ctx = Context::new();
    let (tx, changes) = source();
    // Deadlines no test waits out: only stopping ends the change below.
    let options = follow_options().with_connect(
        ConnectOptions::default()
            .with_rpc_timeout(Duration::from_secs(300))
            .with_timeout(Duration::from_secs(600)),
    );
    let follow = ctx.follow(changes, options);
    let mut events = follow.subscribe();
    tx.send(Ok(workers(&[(0, &w0_address)]))).unwrap();
    next_change(&mut events).await;
    let before = (ctx.context_id(), ctx.context_view_id(), ctx.remote_tasks());

    // Discovering the silent task waits for its deadline; stop the follower inside it.
    tx.send(Ok(workers(&[
        (0, &w0_address),
        (1, &quiet.addr.to_string()),
    ])))
    .unwrap();
    quiet.dialed().await;
    assert!(lock_held(&ctx), "the change does not hold the lock");
    tokio::time::timeout(Duration::from_secs(30), follow.stop())
        .await
        .expect("stop waits for the change in progress");
    assert!(!lock_held(&ctx), "the dropped change still holds the lock");
    assert_eq!(
        (ctx.context_id(), ctx.context_view_id(), ctx.remote_tasks()),
        before
    );
    // The context's lock was released: it updates and closes as usual.
    ctx.update_server_def(workers(&[(0, &w0_address)]), fast())
        .await
        .unwrap();
    assert_eq!(ctx.context_view_id(), 1);
    ctx.close().await.unwrap();
    quiet.task.abort();
    shutdown_all(vec![w0]).await;
}
