//! Faults across real hosts (network namespaces, see `hosts`): a frozen task (SIGSTOP: its
//! kernel still accepts TCP, it never answers), a partitioned host (link down: packets vanish),
//! a task killed with SIGKILL while kept alive and during a connect, and a task restarted on
//! the same port with new incarnations. A connect returns within its deadline naming exactly
//! the failed tasks, and the keep-alive subscription reports death and restart.

use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use nix::sys::signal::Signal;
use remote_connect::{ConnectOptions, Context, Error, TaskEvent, TaskHealth, TaskId};
use tokio::sync::broadcast;

use crate::hosts::Hosts;

const TIMEOUT: Duration = Duration::from_secs(3);

fn options() -> ConnectOptions {
    ConnectOptions::default()
        .with_rpc_timeout(Duration::from_secs(1))
        .with_timeout(TIMEOUT)
        .with_keep_alive_secs(2)
}

/// The tasks a failed connect names.
fn failed(error: &Error) -> Vec<TaskId> {
    match error {
        Error::Tasks { failures, .. } => failures.iter().map(|f| f.task.clone()).collect(),
        other => panic!("not a task failure: {other}"),
    }
}

/// A fresh connect fails within the deadline naming exactly `task`.
async fn connect_fails_naming(spec: &ClusterSpec, task: &TaskId) {
    let start = Instant::now();
    let error = Context::new()
        .connect_to_cluster(spec.clone(), options())
        .await
        .unwrap_err();
    let took = start.elapsed();
    assert!(
        took < TIMEOUT + Duration::from_secs(1),
        "took {took:?}: {error}"
    );
    assert_eq!(failed(&error), std::slice::from_ref(task), "{error}");
}

/// Waits (at most 10 s) for an event about `task` whose health passes `want`.
async fn event(
    events: &mut broadcast::Receiver<TaskEvent>,
    task: &TaskId,
    want: impl Fn(&TaskHealth) -> bool,
) -> TaskHealth {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let e = events.recv().await.expect("the subscription stays open");
            if &e.task == task && want(&e.health) {
                return e.health;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no such event for {task} within 10 s"))
}

fn unreachable(h: &TaskHealth) -> bool {
    matches!(h, TaskHealth::Unreachable { .. })
}

/// Back after a freeze or partition: alive, or without our context if the task collected it
/// meanwhile (it was unreachable past `keep_alive_secs`, as TensorFlow's worker does).
fn back(h: &TaskHealth) -> bool {
    matches!(h, TaskHealth::Alive | TaskHealth::ContextLost)
}

#[test]
fn faults_across_hosts_are_named_and_reported() {
    let hosts = Hosts::create(4);
    let addresses: Vec<_> = (0..4).map(|h| hosts.serve(h, 0)).collect();
    let spec = ClusterSpec::builder()
        .job("worker", addresses.iter().map(ToString::to_string))
        .build()
        .unwrap();
    let task = |i: u32| TaskId::new("worker", i);
    hosts.in_client(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let ctx = Context::new();
            let mut events = ctx.subscribe();
            ctx.connect_to_cluster(spec.clone(), options())
                .await
                .expect("all four hosts answer");

            // Frozen: the connection opens, nothing answers.
            hosts.signal(1, Signal::SIGSTOP);
            connect_fails_naming(&spec, &task(1)).await;
            event(&mut events, &task(1), unreachable).await;
            hosts.signal(1, Signal::SIGCONT);
            event(&mut events, &task(1), back).await;

            // Partitioned: packets vanish.
            hosts.link(2, false);
            connect_fails_naming(&spec, &task(2)).await;
            event(&mut events, &task(2), unreachable).await;
            hosts.link(2, true);
            event(&mut events, &task(2), back).await;

            // Killed while kept alive, then restarted on the same port.
            hosts.kill(3);
            event(&mut events, &task(3), unreachable).await;
            hosts.serve(3, addresses[3].port());
            event(&mut events, &task(3), |h| *h == TaskHealth::ContextLost).await;
            assert_eq!(
                ctx.check_alive(&task(3)).await.unwrap(),
                TaskHealth::Restarted,
                "new incarnations on the same address"
            );

            // Killed during a connect: it succeeds if the task answered first, else it
            // names exactly that task.
            let connecting = tokio::spawn({
                let spec = spec.clone();
                async move { Context::new().connect_to_cluster(spec, options()).await }
            });
            hosts.kill(0);
            let start = Instant::now();
            if let Err(error) = connecting.await.unwrap() {
                assert_eq!(failed(&error), [task(0)], "{error}");
            }
            assert!(start.elapsed() < TIMEOUT + Duration::from_secs(1));
            let _ = ctx.close().await;
        });
    });
}
