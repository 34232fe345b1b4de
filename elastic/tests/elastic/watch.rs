//! Observers of a job's rounds: the `WatchRounds` long poll (rounds in order as nodes join
//! and leave, what the next round waits for, the job's end, an unknown job) and
//! `RendezvousWatcher` as a resolver and as a watch stream (the round first, one item per
//! round, the end, a restarted rendezvous).

use std::sync::Arc;
use std::time::Duration;

use cluster_resolver::watch::{ClusterStream, WatchOptions};
use cluster_resolver::{ClusterResolver, WatchClusterResolver};
use elastic::{
    Error, RendezvousClient, RendezvousServer, RendezvousWatcher, TaskStatus, Watched, WatchedRound,
};
use futures_util::StreamExt;

use crate::common::{
    Backend, LAST_CALL, Rdzv, TIMEOUT, config, fast, join, names, on_another_address,
    on_both_backends, rebind, round, run, server,
};

const SHORT: Duration = Duration::from_millis(300);

async fn watched_round(client: &RendezvousClient, after: Option<&WatchedRound>) -> WatchedRound {
    match client
        .watch_round("job", after, Duration::from_secs(10))
        .await
        .unwrap()
    {
        Watched::Round(round) => round,
        other => panic!("no round after {:?}: {other:?}", after.map(|r| r.number())),
    }
}

fn pending(watched: Watched) -> String {
    match watched {
        Watched::Pending { detail, .. } => detail,
        other => panic!("not pending: {other:?}"),
    }
}

fn member_names(round: &WatchedRound) -> Vec<&str> {
    round.members().iter().map(|m| m.name.as_str()).collect()
}

async fn an_observer_sees_each_round_as_nodes_join_and_leave_then_the_end(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let observer = client.clone();

    let err = observer.watch_round("job", None, SHORT).await.unwrap_err();
    let Error::Refused { code, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*code, elastic::Code::NotFound, "{err}");
    assert!(err.to_string().contains("\"job\""), "{err}");

    let c = config("2:3", 0);
    let mut a = join(&client, "job", &c, 0).await;
    let detail = pending(observer.watch_round("job", None, SHORT).await.unwrap());
    assert_eq!(
        detail,
        "round 1 waits for nodes: 1 of min 2 (max 3) have joined"
    );

    let mut b = join(&client, "job", &c, 1).await;
    let (ra, _) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let r1 = watched_round(&observer, None).await;
    assert_eq!(
        (r1.number(), member_names(&r1)),
        (1, vec!["agent0", "agent1"])
    );
    assert_eq!(r1.cluster_spec(), ra.cluster_spec());
    let detail = pending(observer.watch_round("job", Some(&r1), SHORT).await.unwrap());
    assert_eq!(
        detail,
        "round 1 is running with 2 of max 3 nodes; waiting for round 2"
    );

    // A long poll parked on round 1 answers when round 2 runs, not when round 1 ends.
    let parked = tokio::spawn({
        let (observer, r1) = (observer.clone(), r1.clone());
        async move { watched_round(&observer, Some(&r1)).await }
    });
    let mut n = join(&client, "job", &c, 2).await;
    client.rejoin(&mut a).await.unwrap();
    client.rejoin(&mut b).await.unwrap();
    let (ra, _, _) = tokio::join!(
        round(&client, &mut a),
        round(&client, &mut b),
        round(&client, &mut n)
    );
    let r2 = parked.await.unwrap();
    assert_eq!(
        (r2.number(), member_names(&r2)),
        (2, vec!["agent0", "agent1", "agent2"])
    );
    assert_eq!(r2.cluster_spec(), ra.cluster_spec());

    // A member leaving ends round 2; the others form round 3 without it.
    client.leave(&b).await.unwrap();
    client.rejoin(&mut a).await.unwrap();
    client.rejoin(&mut n).await.unwrap();
    let (ra, _) = tokio::join!(round(&client, &mut a), round(&client, &mut n));
    let r3 = watched_round(&observer, Some(&r2)).await;
    assert_eq!(
        (r3.number(), member_names(&r3)),
        (3, vec!["agent0", "agent2"])
    );
    assert_eq!(names(&ra), member_names(&r3));

    // Observing kept nothing alive and changed nothing: the rounds are the members'.
    client
        .report(&a, 3, 0, TaskStatus::Exited(0), "")
        .await
        .unwrap();
    let Watched::JobDone(done) = observer.watch_round("job", Some(&r3), SHORT).await.unwrap()
    else {
        panic!("the job goes on");
    };
    assert!(done.succeeded && done.round == 3, "{done}");
    rdzv.shutdown().await;
}

async fn a_watcher_resolves_the_running_round(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let watcher = RendezvousWatcher::new(client.clone(), "job").with_round_timeout(SHORT);
    let c = config("2", 0);
    let mut a = join(&client, "job", &c, 0).await;
    let err = watcher.cluster_spec().await.unwrap_err();
    assert!(
        cluster_spec::__private::error_chain::Chain(&err)
            .to_string()
            .contains("round 1 waits for nodes: 1 of min 2 (max 2) have joined"),
        "{}",
        cluster_spec::__private::error_chain::Chain(&err)
    );
    let mut b = join(&client, "job", &c, 1).await;
    let (ra, _) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    assert_eq!(&watcher.cluster_spec().await.unwrap(), ra.cluster_spec());
    assert_eq!(
        watcher.master(None, None, None).await.unwrap(),
        "grpc://127.0.0.1:20000"
    );
    assert_eq!(
        watcher
            .master(Some("worker"), Some(1), Some(""))
            .await
            .unwrap(),
        "127.0.0.1:20001"
    );
    assert_eq!((watcher.task_type(), watcher.task_id()), (None, None));
    assert_eq!(watcher.rpc_layer().as_deref(), Some("grpc"));
    rdzv.shutdown().await;
}

fn options() -> WatchOptions {
    WatchOptions::default().with_backoff(Duration::from_millis(50), Duration::from_millis(200))
}

async fn next(stream: &mut ClusterStream) -> Result<cluster_spec::ClusterSpec, String> {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("no item within 10 s")
        .expect("the stream ended")
        .map_err(|e| cluster_spec::__private::error_chain::Chain(&e).to_string())
}

async fn a_watch_yields_the_round_then_one_item_per_round_then_the_end(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let mut stream = Arc::new(RendezvousWatcher::new(client.clone(), "job")).watch(options());

    // No job yet: an error item, and the watch goes on until the job exists.
    let err = next(&mut stream).await.unwrap_err();
    assert!(err.contains("NotFound") && err.contains("\"job\""), "{err}");

    let c = config("2:3", 0);
    let mut a = join(&client, "job", &c, 0).await;
    let mut b = join(&client, "job", &c, 1).await;
    let (ra, _) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    assert_eq!(&next(&mut stream).await.unwrap(), ra.cluster_spec());

    let mut n = join(&client, "job", &c, 2).await;
    client.rejoin(&mut a).await.unwrap();
    client.rejoin(&mut b).await.unwrap();
    let (ra, _, _) = tokio::join!(
        round(&client, &mut a),
        round(&client, &mut b),
        round(&client, &mut n)
    );
    let spec = next(&mut stream).await.unwrap();
    assert_eq!(
        (&spec, spec.num_tasks("worker").unwrap()),
        (ra.cluster_spec(), 3)
    );

    client
        .report(&a, 2, 0, TaskStatus::Exited(0), "")
        .await
        .unwrap();
    let err = next(&mut stream).await.unwrap_err();
    assert!(
        err.contains("job \"job\" is over: the job succeeded in round 2"),
        "{err}"
    );
    // Then nothing more, and the stream stays open.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), stream.next())
            .await
            .is_err()
    );
    rdzv.shutdown().await;
}

#[test]
fn a_watch_outlives_a_rendezvous_restart() {
    run(on_another_address(|| async {
        let server = server().await;
        let addr = server.local_addr();
        // Short retries, so the restart shows as error items.
        let client = RendezvousClient::new(
            addr.to_string(),
            fast().with_retry_for(Duration::from_millis(200)),
        )
        .unwrap();
        let mut stream = Arc::new(RendezvousWatcher::new(client.clone(), "job")).watch(options());
        let c = config("1", 0);
        let mut a = join(&client, "job", &c, 0).await;
        let ra = round(&client, &mut a).await;
        assert_eq!(&next(&mut stream).await.unwrap(), ra.cluster_spec());

        server.shutdown().await;
        let err = next(&mut stream).await.unwrap_err();
        assert!(err.contains("unreachable"), "{err}");

        // The new rendezvous knows no job until a node joins, whose round 1 is news.
        let server = rebind(addr, RendezvousServer::builder().with_last_call(SHORT)).await?;
        let client = crate::common::client(&server);
        let mut b = join(&client, "job", &c, 5).await;
        let rb = round(&client, &mut b).await;
        let spec = loop {
            match next(&mut stream).await {
                Ok(spec) => break spec,
                Err(e) => assert!(e.contains("unreachable") || e.contains("NotFound"), "{e}"),
            }
        };
        assert_eq!(&spec, rb.cluster_spec());
        assert_eq!(spec.task_address("worker", 0).unwrap(), "127.0.0.1:20005");

        // A restart at once, its job at round 1 again before the watch asks (its retries
        // hide the restart): round 1 of the new job is still news.
        server.shutdown().await;
        let server = rebind(addr, RendezvousServer::builder()).await?;
        let client = crate::common::client(&server);
        let mut b = join(&client, "job", &c, 6).await;
        let rb = round(&client, &mut b).await;
        let spec = loop {
            match next(&mut stream).await {
                Ok(spec) => break spec,
                Err(e) => assert!(e.contains("unreachable") || e.contains("NotFound"), "{e}"),
            }
        };
        assert_eq!(&spec, rb.cluster_spec());
        assert_eq!(spec.task_address("worker", 0).unwrap(), "127.0.0.1:20006");
        server.shutdown().await;
        Some(())
    }));
}

on_both_backends!(
    an_observer_sees_each_round_as_nodes_join_and_leave_then_the_end,
    a_watcher_resolves_the_running_round,
    a_watch_yields_the_round_then_one_item_per_round_then_the_end
);
