//! Rounds forming and ending, as agents see them over gRPC.

use std::time::{Duration, Instant};

use elastic::failure_policy::Restart;
use elastic::{EndReason, Join, Node, RendezvousClient, Round, RoundStatus, TaskStatus, Waited};

use crate::common::{
    Backend, LAST_CALL, Rdzv, TIMEOUT, config, join, names, on_both_backends, round,
};

async fn closes_at_max_at_once(backend: Backend) {
    let rdzv = Rdzv::start(backend, Duration::from_secs(60), TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("2:3", 0);
    let mut nodes = Vec::new();
    for i in 0..3 {
        nodes.push(join(&client, "job", &c, i).await);
    }
    let start = Instant::now();
    let mut rounds = Vec::new();
    for node in &mut nodes {
        rounds.push(round(&client, node).await);
    }
    // Not the 60 s last call: max closed it.
    assert!(start.elapsed() < Duration::from_secs(5));
    for (rank, r) in rounds.iter().enumerate() {
        assert_eq!(
            (r.number(), r.rank(), r.restart_count()),
            (1, rank as u32, 0)
        );
        assert_eq!(r.cluster_spec(), rounds[0].cluster_spec());
        assert_eq!(names(r), ["agent0", "agent1", "agent2"]);
    }
    assert_eq!(
        rounds[2].cluster_spec().to_json(),
        r#"{"worker":["127.0.0.1:20000","127.0.0.1:20001","127.0.0.1:20002"]}"#
    );
    assert_eq!(rounds[1].local_tasks()[0].task.task, 1);
    rdzv.shutdown().await;
}

async fn closes_after_the_last_call_with_min(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("2:4", 0);
    let mut a = join(&client, "job", &c, 0).await;
    // Below min: nothing forms, and the wait says so.
    let err = client
        .wait_round(&mut a, Duration::from_millis(500))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no round of job \"job\" within {}: round 1 waits for nodes: 1 of min 2 (max 4) \
                 have joined",
            elastic_duration(&err)
        )
    );
    // b's join brings the round to min: its last call runs from no earlier than now. The etcd
    // record keeps instants in whole milliseconds of the wall clock: one may be lost each way.
    let min = Instant::now();
    let mut b = join(&client, "job", &c, 1).await;
    let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let waited = min.elapsed();
    assert!(
        waited >= LAST_CALL - Duration::from_millis(2),
        "closed {waited:?} after b's join was sent, before the {LAST_CALL:?} last call"
    );
    assert_eq!((ra.number(), rb.number()), (1, 1));
    assert_eq!(names(&rb), ["agent0", "agent1"]);
}

/// The "within N ms" part of a wait timeout, which varies.
fn elastic_duration(err: &elastic::Error) -> String {
    let elastic::Error::WaitTimeout { waited, .. } = err else {
        panic!("not a wait timeout: {err}");
    };
    if *waited < Duration::from_secs(1) {
        format!("{} ms", waited.as_millis())
    } else {
        format!("{:.1} s", waited.as_secs_f64())
    }
}

async fn a_late_joiner_waits_for_the_next_round(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("1:2", 0);
    let (mut a, mut b) = (
        join(&client, "job", &c, 0).await,
        join(&client, "job", &c, 1).await,
    );
    let (ra, _) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let mut late = join(&client, "job", &c, 2).await;
    assert_eq!(late.waits_for(), 2);
    assert_eq!(
        late.note(),
        "round 1 is full (max 2 nodes): waiting for a later round"
    );
    let err = client
        .wait_round(&mut late, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("round 1 is running with 2 of max 2 nodes; waiting for round 2"),
        "{err}"
    );
    // Round 1 ends (b leaves); the late node and a form round 2.
    client.leave(&b).await.unwrap();
    let RoundStatus::Ended(end) = client.heartbeat(&a, ra.number()).await.unwrap() else {
        panic!("round 1 still runs");
    };
    assert_eq!((end.reason, end.restart_count), (EndReason::NodeLeft, 0));
    client.rejoin(&mut a).await.unwrap();
    let (ra2, rl) = tokio::join!(round(&client, &mut a), round(&client, &mut late));
    assert_eq!((ra2.number(), rl.number()), (2, 2));
    assert_eq!(names(&rl), ["agent0", "agent2"]);
}

async fn a_new_node_below_max_ends_the_round_and_joins_the_next(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("2:4", 0);
    let (mut a, mut b) = (
        join(&client, "job", &c, 0).await,
        join(&client, "job", &c, 1).await,
    );
    let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let (mut ha, mut hb) = (client.heartbeats(&a, &ra), client.heartbeats(&b, &rb));

    let mut newcomer = join(&client, "job", &c, 2).await;
    assert_eq!(newcomer.note(), "round 1 ended to take this node in");
    for hearts in [&mut ha, &mut hb] {
        let RoundStatus::Ended(end) = hearts.ended().await.unwrap() else {
            panic!("not ended");
        };
        assert_eq!(end.reason, EndReason::NodeJoined);
        assert_eq!(
            end.detail,
            "node ".to_owned()
                + newcomer.node_id()
                + " (agent2) on 127.0.0.1 joined; round 1 had 2 of max 4 nodes"
        );
    }
    client.rejoin(&mut a).await.unwrap();
    client.rejoin(&mut b).await.unwrap();
    let (ra, rb, rn) = tokio::join!(
        round(&client, &mut a),
        round(&client, &mut b),
        round(&client, &mut newcomer)
    );
    assert_eq!((ra.number(), rb.number(), rn.number()), (2, 2, 2));
    // Membership changes are not failures.
    assert_eq!(rn.restart_count(), 0);
    assert_eq!(names(&rn), ["agent0", "agent1", "agent2"]);
    assert_eq!(rn.rank(), 2);
}

async fn a_silent_node_is_lost_and_the_next_round_excludes_it(backend: Backend) {
    let rdzv = Rdzv::start(
        backend,
        Duration::from_millis(200),
        Duration::from_millis(600),
    )
    .await;
    let client = rdzv.client().await;
    let c = config("1:3", 5);
    let (mut a, mut b, mut silent) = (
        join(&client, "job", &c, 0).await,
        join(&client, "job", &c, 1).await,
        join(&client, "job", &c, 2).await,
    );
    let (ra, rb, _) = tokio::join!(
        round(&client, &mut a),
        round(&client, &mut b),
        round(&client, &mut silent)
    );
    assert_eq!(a.heartbeat_timeout(), Duration::from_millis(600));
    let (mut ha, mut hb) = (client.heartbeats(&a, &ra), client.heartbeats(&b, &rb));
    let start = Instant::now();
    // agent2 never heartbeats.
    let RoundStatus::Ended(end) = ha.ended().await.unwrap() else {
        panic!("not ended");
    };
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    assert_eq!((end.reason, end.restart_count), (EndReason::NodeLost, 1));
    assert!(
        end.detail
            .ends_with("(agent2) on 127.0.0.1 silent for more than 600 ms"),
        "{}",
        end.detail
    );
    assert_eq!(hb.ended().await.unwrap(), RoundStatus::Ended(end));
    client.rejoin(&mut a).await.unwrap();
    client.rejoin(&mut b).await.unwrap();
    let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    assert_eq!(names(&ra), ["agent0", "agent1"]);
    assert_eq!(
        (ra.number(), ra.restart_count(), rb.restart_count()),
        (2, 1, 1)
    );
    // The lost node is told it is no longer in the job.
    let err = client.heartbeat(&silent, 1).await.unwrap_err();
    assert!(err.to_string().contains("NotFound: node "), "{err}");
}

async fn a_failure_ends_the_round_and_every_node_sees_the_restart_count(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("3", 3);
    let mut nodes = Vec::new();
    for i in 0..3 {
        nodes.push(join(&client, "job", &c, i).await);
    }
    for restart in 0..2u32 {
        let mut rounds = Vec::new();
        for node in &mut nodes {
            rounds.push(round(&client, node).await);
        }
        assert!(rounds.iter().all(|r| r.restart_count() == restart));
        let mut hearts: Vec<_> = nodes
            .iter()
            .zip(&rounds)
            .map(|(n, r)| client.heartbeats(n, r))
            .collect();
        // Another failure each time: the same one twice would be a crash loop.
        let tail = ["ValueError: bad\n", "OSError: disk full\n"][restart as usize];
        let counted = client
            .report(
                &nodes[1],
                rounds[1].number(),
                0,
                TaskStatus::Exited(1),
                tail,
            )
            .await
            .unwrap();
        assert!(counted);
        for h in &mut hearts {
            let RoundStatus::Ended(end) = h.ended().await.unwrap() else {
                panic!("not ended");
            };
            assert_eq!(
                (end.reason, end.restart_count),
                (EndReason::TaskFailed, restart + 1)
            );
            assert!(
                end.detail
                    .starts_with("task worker:1 (local task 0 of node "),
                "{}",
                end.detail
            );
            let tail = format!(
                " on 127.0.0.1) exited with status 1 in round {}",
                restart + 1
            );
            assert!(end.detail.ends_with(&tail), "{}", end.detail);
        }
        for node in &mut nodes {
            client.rejoin(node).await.unwrap();
        }
    }
    let r = round(&client, &mut nodes[0]).await;
    assert_eq!((r.number(), r.restart_count()), (3, 2));
}

async fn restarts_are_bounded_and_the_first_failure_is_the_story(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("1", 0);
    let mut a = join(&client, "job", &c, 0).await;
    let r = round(&client, &mut a).await;
    client
        .report(&a, r.number(), 0, TaskStatus::Signaled(9), "killed\n")
        .await
        .unwrap();
    let RoundStatus::JobDone(done) = client.heartbeat(&a, r.number()).await.unwrap() else {
        panic!("the job goes on");
    };
    assert!(!done.succeeded);
    let first = done.first_failure.unwrap();
    assert_eq!(
        (first.job.as_str(), first.status, first.stderr_tail.as_str()),
        ("worker", TaskStatus::Signaled(9), "killed\n")
    );
    // Every later call learns it, and the id cannot start a second job.
    let Waited::JobDone(_) = client
        .wait_round(&mut a, Duration::from_secs(1))
        .await
        .unwrap()
    else {
        panic!("a round after the job failed");
    };
    let err = client
        .join(&Join::new("job", c, vec![1]))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "FailedPrecondition: rendezvous \"job\" is finished (the job failed in round 1"
        ),
        "{err}"
    );
}

async fn a_hung_task_is_the_story_with_its_quiet_period(backend: Backend) {
    // The watchdog's report: the status names the quiet period, the tail holds the stack, and
    // both survive the wire and the store.
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let mut a = join(&client, "job", &config("1", 0), 0).await;
    let r = round(&client, &mut a).await;
    let hung = TaskStatus::Hung {
        quiet: Duration::from_millis(5500),
    };
    let stack = "Current thread 0x1 (most recent call first):\n  File \"t.py\", line 4 in stuck\n";
    client
        .report(&a, r.number(), 0, hung.clone(), stack)
        .await
        .unwrap();
    let RoundStatus::JobDone(done) = client.heartbeat(&a, r.number()).await.unwrap() else {
        panic!("the job goes on");
    };
    let first = done.first_failure.unwrap();
    assert_eq!((&first.status, first.stderr_tail.as_str()), (&hung, stack));
    assert!(
        first
            .to_string()
            .contains(") hung: no progress for 5.5s in round 1"),
        "{first}"
    );
    rdzv.shutdown().await;
}

async fn the_chief_succeeding_ends_the_job_for_every_node(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = elastic::JobConfig::new("2".parse().unwrap(), 2)
        .unwrap()
        .with_layout("chief=1,ps=1".parse().unwrap())
        .unwrap();
    let join_n = |i: u16| Join::new("ps-job", c.clone(), vec![21_000 + 2 * i, 21_001 + 2 * i]);
    let (mut a, mut b) = (
        client.join(&join_n(0)).await.unwrap(),
        client.join(&join_n(1)).await.unwrap(),
    );
    let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    let jobs: Vec<_> = ra
        .local_tasks()
        .iter()
        .chain(rb.local_tasks())
        .map(|t| t.task.short_name())
        .collect();
    assert_eq!(jobs, ["chief:0", "ps:0", "worker:0", "worker:1"]);
    let mut hb = client.heartbeats(&b, &rb);
    client
        .report(&b, 1, 0, TaskStatus::Exited(0), "")
        .await
        .unwrap();
    client
        .report(&a, 1, 0, TaskStatus::Exited(0), "")
        .await
        .unwrap();
    let RoundStatus::JobDone(done) = hb.ended().await.unwrap() else {
        panic!("not done");
    };
    assert!(done.succeeded, "{done}");
    assert!(matches!(
        hb.ended().await,
        Err(elastic::Error::HeartbeatsFinished)
    ));
}

async fn conflicting_configs_on_one_id_are_refused_naming_both(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    join(&client, "job", &config("2:4", 3), 0).await;
    let err = client
        .join(&Join::new("job", config("2:3", 3), vec![20_001]))
        .await
        .unwrap_err();
    let elastic::Error::Refused { code, .. } = &err else {
        panic!("not refused: {err}");
    };
    assert_eq!(*code, elastic::Code::FailedPrecondition);
    assert_eq!(
        err.to_string(),
        format!(
            "rendezvous at {} refused Join: FailedPrecondition: rendezvous \"job\" runs a job \
                 with another config: nodes 2:4 (this node: 2:3)",
            rdzv.addr()
        )
    );
    // Another id is another job.
    join(&client, "job2", &config("2:3", 3), 1).await;
}

/// A waiting node hears how its round forms: first after about a second (a round would
/// have come at once), then as each host joins, never at once (which its pacing would slow).
async fn a_waiting_node_hears_how_its_round_forms(backend: Backend) {
    let rdzv = Rdzv::start(backend, Duration::from_secs(60), TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("2:3", 0);
    let mut first = join(&client, "job", &c, 0).await;
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let start = Instant::now();
    let task = {
        let (client, heard) = (client.clone(), heard.clone());
        tokio::spawn(async move {
            let mut report = |p: &elastic::WaitProgress| {
                let said = (
                    start.elapsed(),
                    p.round(),
                    p.waiting(),
                    p.detail().to_owned(),
                );
                heard.lock().unwrap().push(said);
            };
            client
                .wait_round_reporting(&mut first, TIMEOUT, &mut report)
                .await
        })
    };
    let heard_at_least = |n: usize| {
        let heard = heard.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            while heard.lock().unwrap().len() < n {
                assert!(Instant::now() < deadline, "{:?}", heard.lock().unwrap());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            heard.lock().unwrap()[n - 1].clone()
        }
    };
    let (at, round, waiting, detail) = heard_at_least(1).await;
    assert!(
        (Duration::from_millis(900)..Duration::from_secs(3)).contains(&at),
        "{at:?}"
    );
    assert_eq!((round, waiting), (1, 1));
    assert_eq!(
        detail,
        "round 1 waits for nodes: 1 of min 2 (max 3) have joined"
    );
    let joined = Instant::now();
    let _second = join(&client, "job", &c, 1).await;
    let (at, round, waiting, detail) = heard_at_least(2).await;
    assert!(start + at - joined < Duration::from_secs(2), "{at:?}");
    assert_eq!((round, waiting), (1, 2));
    assert!(
        detail.starts_with("round 1 has 2 of max 3 nodes"),
        "{detail}"
    );
    // The third closes the round at max: a round, at once.
    let _third = join(&client, "job", &c, 2).await;
    let waited = task.await.unwrap().unwrap();
    assert!(matches!(waited, Waited::Round(_)), "{waited:?}");
    rdzv.shutdown().await;
}

/// Three one-task nodes of a ParameterServerStrategy job in their first round: chief:0,
/// ps:0, worker:0, in that order.
async fn parameter_server_round(client: &RendezvousClient) -> (Vec<Node>, Vec<Round>) {
    let c = config("3", 5)
        .with_layout("chief=1,ps=1".parse().unwrap())
        .unwrap();
    let mut nodes = Vec::new();
    for i in 0..3 {
        nodes.push(join(client, "job", &c, i).await);
    }
    let mut rounds = Vec::new();
    for node in &mut nodes {
        rounds.push(round(client, node).await);
    }
    (nodes, rounds)
}

async fn a_parameter_server_strategy_worker_restarts_in_place_and_a_crash_loop_ends_the_job(
    backend: Backend,
) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let (nodes, rounds) = parameter_server_round(&client).await;
    let number = rounds[2].number();
    let boom = "ValueError: bad batch 3\n";
    let answer = client
        .report_exit(&nodes[2], number, 0, TaskStatus::Exited(1), boom, true)
        .await
        .unwrap();
    assert_eq!(
        (answer.in_place, answer.task_restarts),
        (Some(Restart::Task), 1)
    );
    // The round runs on, and the operator's status shows the restart.
    assert_eq!(
        client.heartbeat(&nodes[0], number).await.unwrap(),
        RoundStatus::Running
    );
    let status = client
        .job_status("job", None, Duration::ZERO)
        .await
        .unwrap();
    let restarted = &status.task_restarts[0];
    assert_eq!(
        (
            restarted.job.as_str(),
            restarted.restarts,
            restarted.failures
        ),
        ("worker", 1, 1)
    );
    assert_eq!(restarted.last_failure.stderr_tail, boom);
    // The same failure again without progress: a crash loop, which ends the job at once.
    let answer = client
        .report_exit(&nodes[2], number, 0, TaskStatus::Exited(1), boom, false)
        .await
        .unwrap();
    assert_eq!(answer.in_place, None);
    let RoundStatus::JobDone(done) = client.heartbeat(&nodes[0], number).await.unwrap() else {
        panic!("the job goes on");
    };
    assert!(
        done.detail.starts_with(
            "a crash loop: \"exited with status 1: ValueError: bad batch N\" twice in a row on \
             node "
        ),
        "{}",
        done.detail
    );
    rdzv.shutdown().await;
}

async fn a_parameter_server_restarts_in_place_and_the_chief_s_node_is_asked_at_once(
    backend: Backend,
) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let (nodes, rounds) = parameter_server_round(&client).await;
    let number = rounds[0].number();
    let mut chief_beats = client.heartbeats(&nodes[0], &rounds[0]);
    let answer = client
        .report_exit(&nodes[1], number, 0, TaskStatus::Signaled(9), "", true)
        .await
        .unwrap();
    assert_eq!(answer.in_place, Some(Restart::Task), "{}", answer.note);
    // The chief's node, whose heartbeat the rendezvous holds, hears the ask at once, and
    // once; the worker's node hears none.
    let asked = Instant::now();
    let heard = tokio::time::timeout(TIMEOUT, chief_beats.next()).await;
    assert_eq!(heard.unwrap().unwrap(), RoundStatus::RestartChief(1));
    assert!(asked.elapsed() < TIMEOUT / 2, "{:?}", asked.elapsed());
    let again = tokio::time::timeout(Duration::from_secs(1), chief_beats.next()).await;
    assert!(again.is_err(), "asked twice: {again:?}");
    assert_eq!(
        client.heartbeat(&nodes[2], number).await.unwrap(),
        RoundStatus::Running
    );
    rdzv.shutdown().await;
}

on_both_backends!(
    a_parameter_server_restarts_in_place_and_the_chief_s_node_is_asked_at_once,
    a_parameter_server_strategy_worker_restarts_in_place_and_a_crash_loop_ends_the_job,
    closes_at_max_at_once,
    a_waiting_node_hears_how_its_round_forms,
    closes_after_the_last_call_with_min,
    a_late_joiner_waits_for_the_next_round,
    a_new_node_below_max_ends_the_round_and_joins_the_next,
    a_silent_node_is_lost_and_the_next_round_excludes_it,
    a_failure_ends_the_round_and_every_node_sees_the_restart_count,
    restarts_are_bounded_and_the_first_failure_is_the_story,
    a_hung_task_is_the_story_with_its_quiet_period,
    the_chief_succeeding_ends_the_job_for_every_node,
    conflicting_configs_on_one_id_are_refused_naming_both
);
