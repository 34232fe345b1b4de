//! A context following a cluster file of real TensorFlow 2.21 workers: a worker added to the
//! file is followed on the file's event and serves ops while tensors on the others survive
//! (an update), a worker removed takes its devices and handles with it, a new job resets, and
//! a file rewritten a hundred times in a second ends on its last version.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cluster_resolver::watch::{self, WatchOptions};
use futures_util::StreamExt;
use remote_connect::{
    ConnectOptions, Context, Error, FollowEvent, FollowOptions, Op, Staleness, TaskId, Tensor,
};

use super::tf_cluster;
use crate::follow::next_change;

/// A cluster file in a directory of its own, removed when dropped.
struct ClusterFile {
    dir: PathBuf,
    path: PathBuf,
}

impl ClusterFile {
    fn new(name: &str, json: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("follow-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = Self {
            path: dir.join("cluster.json"),
            dir,
        };
        file.replace(json);
        file
    }

    /// Replaces the file atomically, by rename, as a launcher writes it.
    fn replace(&self, json: &str) {
        let next = self.dir.join("cluster.json.next");
        std::fs::write(&next, json).unwrap();
        std::fs::rename(&next, &self.path).unwrap();
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ClusterFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn options() -> FollowOptions {
    FollowOptions::new(ConnectOptions::default().with_rpc_timeout(Duration::from_secs(30)))
}

fn cpu(job: &str, task: u32) -> String {
    format!("/job:{job}/replica:0/task:{task}/device:CPU:0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_cluster_file_of_tensorflow_workers() {
    let (mut tf, spec) = tf_cluster(&[("worker", 3), ("ps", 1)]);
    let a: Vec<String> = (0..3)
        .map(|t| spec.task_address("worker", t).unwrap().to_owned())
        .collect();
    let ps = spec.task_address("ps", 0).unwrap().to_owned();
    let file = ClusterFile::new("tf", &format!(r#"{{"worker": ["{}", "{}"]}}"#, a[0], a[1]));
    let ctx = Context::new();
    // No safety re-read within the test: each change below arrives by the file's own event.
    let events_only = WatchOptions::default().with_interval(Duration::from_secs(3600));
    let follow = ctx.follow(watch::file(file.path(), events_only), options());
    let mut events = follow.subscribe();
    let first = next_change(&mut events).await;
    assert_eq!(
        first.added,
        [TaskId::new("worker", 0), TaskId::new("worker", 1)]
    );

    // A tensor kept on worker 0, and a handle on worker 1, from before the changes.
    let w0 = ctx.device(&cpu("worker", 0)).unwrap();
    let w1 = ctx.device(&cpu("worker", 1)).unwrap();
    let x = Tensor::vector(vec![1.0f32, 2.0]);
    let kept = ctx
        .enqueue(&w0, Op::new("AddV2").input(&x).input(&x))
        .await
        .unwrap();

    // A third worker written to the file: followed on its event, an update in place.
    let written = Instant::now();
    file.replace(&format!(
        r#"{{"worker": ["{}", "{}", "{}"]}}"#,
        a[0], a[1], a[2]
    ));
    let added = next_change(&mut events).await;
    let took = written.elapsed();
    // About 60 ms (the watch's 50 ms coalescing and the RPCs); 5 s leaves a busy machine
    // room and still catches a change that waits on more than its event.
    assert!(took < Duration::from_secs(5), "followed in {took:?}");
    assert_eq!(added.added, [TaskId::new("worker", 2)]);
    assert!(!added.reset);
    let names: Vec<String> = ctx
        .list_logical_devices()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(names.contains(&cpu("worker", 2)), "{names:?}");
    let w2 = ctx.device(&cpu("worker", 2)).unwrap();
    let y = ctx
        .execute(&w2, Op::new("Mul").input(&x).input(&x))
        .await
        .unwrap();
    assert_eq!(y[0].to_vec::<f32>().unwrap(), [1.0, 4.0]);
    assert_eq!(
        kept[0].fetch().await.unwrap().to_vec::<f32>().unwrap(),
        [2.0, 4.0]
    );

    // Worker 1 removed: its devices are gone, its handles stale; worker 0's tensor lives.
    file.replace(&format!(
        r#"{{"worker": {{"0": "{}", "2": "{}"}}}}"#,
        a[0], a[2]
    ));
    let removed = next_change(&mut events).await;
    assert_eq!(removed.removed, [TaskId::new("worker", 1)]);
    assert!(!removed.reset);
    let names: Vec<String> = ctx
        .list_logical_devices()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(!names.contains(&cpu("worker", 1)), "{names:?}");
    let stale = ctx
        .execute(&w1, Op::new("AddV2").input(&x).input(&x))
        .await
        .unwrap_err();
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
    assert_eq!(
        kept[0].fetch().await.unwrap().to_vec::<f32>().unwrap(),
        [2.0, 4.0]
    );

    // Job `ps` added: it sorts before `worker`, so TensorFlow's rule resets; every old handle
    // is stale and the event says so.
    file.replace(&format!(
        r#"{{"ps": ["{ps}"], "worker": {{"0": "{}", "2": "{}"}}}}"#,
        a[0], a[2]
    ));
    let reset = next_change(&mut events).await;
    assert!(reset.reset);
    assert_eq!(reset.added, [TaskId::new("ps", 0)]);
    let stale = ctx.device_attributes(&w2).unwrap_err();
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
    assert!(matches!(
        kept[0].fetch().await,
        Err(Error::StaleTensor { .. })
    ));
    let p = ctx.device(&cpu("ps", 0)).unwrap();
    let z = ctx
        .execute(&p, Op::new("AddV2").input(&x).input(&x))
        .await
        .unwrap();
    assert_eq!(z[0].to_vec::<f32>().unwrap(), [2.0, 4.0]);

    follow.stop().await;
    ctx.close().await.unwrap();
    tokio::task::block_in_place(|| tf.send(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_rewritten_a_hundred_times_in_a_second_ends_on_its_last_version() {
    let (mut tf, spec) = tf_cluster(&[("worker", 3)]);
    let a: Vec<String> = (0..3)
        .map(|t| spec.task_address("worker", t).unwrap().to_owned())
        .collect();
    let version = |i: usize| match i % 3 {
        0 => format!(r#"{{"worker": ["{}"]}}"#, a[0]),
        1 => format!(r#"{{"worker": ["{}", "{}"]}}"#, a[0], a[1]),
        _ => format!(r#"{{"worker": ["{}", "{}", "{}"]}}"#, a[0], a[1], a[2]),
    };
    let file = ClusterFile::new("rewrites", &version(0));
    // Count what the watch yields: the changes the follower could observe.
    let observed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = observed.clone();
    let changes = watch::file(file.path(), WatchOptions::default()).inspect(move |item| {
        if item.is_ok() {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let ctx = Context::new();
    let follow = ctx.follow(changes, options());
    let mut events = follow.subscribe();
    next_change(&mut events).await;

    // 100 rewrites in place (truncate and write, as an editor saves), 10 ms apart, ending on
    // two workers.
    let last = 100;
    for i in 1..=last {
        std::fs::write(file.path(), version(i)).unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let expected = vec![
        (TaskId::new("worker", 0), a[0].clone()),
        (TaskId::new("worker", 1), a[1].clone()),
    ];
    assert_eq!(last % 3, 1, "the last version has two workers");
    let settled = Instant::now() + Duration::from_secs(20);
    while ctx.remote_tasks() != expected {
        assert!(
            Instant::now() < settled,
            "did not settle on the last version"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Let the watcher's periodic re-read pass: no further change comes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut applied = 1;
    while let Ok(event) = events.try_recv() {
        match event {
            FollowEvent::Changed(_) => applied += 1,
            FollowEvent::Source(error) => eprintln!("source: {error}"),
            other => panic!("{other:?}"),
        }
    }
    let observed = observed.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("100 rewrites: {observed} versions observed, {applied} applied");
    assert!(
        applied <= observed,
        "{applied} applied > {observed} observed"
    );
    assert!(observed < 100, "the watch coalesced nothing: {observed}");
    assert_eq!(ctx.remote_tasks(), expected);

    follow.stop().await;
    ctx.close().await.unwrap();
    tokio::task::block_in_place(|| tf.send(""));
}
