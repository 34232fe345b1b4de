//! The state machine alone, with the clock stepped by hand.

use super::*;
use crate::NodeRange;

const LAST_CALL: Duration = Duration::from_secs(3);
const TIMEOUT: Duration = Duration::from_secs(15);

fn registry() -> Registry {
    Registry::new(Settings {
        last_call: LAST_CALL,
        timeout: TIMEOUT,
        max_jobs: 4,
    })
}

fn config(min: u32, max: u32, layout: &str, max_restarts: u32) -> JobConfig {
    JobConfig::new(NodeRange::new(min, max).unwrap(), 1)
        .unwrap()
        .with_layout(layout.parse().unwrap())
        .unwrap()
        .with_max_restarts(max_restarts)
}

fn join_as(
    r: &mut Registry,
    c: &JobConfig,
    id: &str,
    port: u16,
    now: Instant,
) -> Result<Joined, Refusal> {
    r.join(
        JoinArgs {
            rdzv_id: "job".into(),
            config: c.clone(),
            node_id: Some(id.into()),
            host: "127.0.0.1".into(),
            ports: vec![port],
            name: String::new(),
        },
        now,
    )
}

/// The round node `id` holds now, as (number, restart count, member ids, its rank).
fn round_of(
    r: &mut Registry,
    id: &str,
    after: u64,
    now: Instant,
) -> Option<(u64, u32, Vec<String>, u32)> {
    match r.wait("job", id, after, now).unwrap() {
        Waited::Round { round, rank } => Some((
            round.number,
            round.restart_count,
            round.members.iter().map(|m| m.node_id.clone()).collect(),
            rank,
        )),
        _ => None,
    }
}

fn ended(r: &mut Registry, id: &str, round: u64, now: Instant) -> RoundEnd {
    match r.heartbeat("job", id, round, now).unwrap() {
        RoundStatus::Ended(end) => end,
        other => panic!("round {round} did not end: {other:?}"),
    }
}

#[test]
fn closes_at_max_at_once() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 3, "", 0));
    for (i, id) in ["a", "b"].iter().enumerate() {
        let joined = join_as(&mut r, &c, id, 1000 + i as u16, t0).unwrap();
        assert_eq!(joined.round, 1);
    }
    assert!(round_of(&mut r, "a", 0, t0).is_none());
    let joined = join_as(&mut r, &c, "c", 1002, t0).unwrap();
    assert_eq!((joined.round, joined.note.as_str()), (1, "round 1 formed"));
    assert_eq!(
        round_of(&mut r, "c", 0, t0),
        Some((1, 0, vec!["a".into(), "b".into(), "c".into()], 2))
    );
}

#[test]
fn closes_after_the_last_call_with_min() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    r.tick(t0 + LAST_CALL * 2);
    assert!(
        round_of(&mut r, "a", 0, t0 + LAST_CALL * 2).is_none(),
        "below min"
    );
    let t1 = t0 + LAST_CALL * 2;
    join_as(&mut r, &c, "b", 1001, t1).unwrap();
    r.tick(t1 + LAST_CALL / 2);
    let Waited::Pending(p) = r.wait("job", "a", 0, t1 + LAST_CALL / 2).unwrap() else {
        panic!("closed before the last call");
    };
    assert_eq!(
        p.detail,
        "round 1 has 2 of max 4 nodes; it closes when 4 have joined or 3.0 s after the last \
         join (1.5 s left)"
    );
    r.tick(t1 + LAST_CALL);
    assert_eq!(round_of(&mut r, "b", 0, t1 + LAST_CALL).unwrap().0, 1);
}

#[test]
fn a_late_joiner_waits_when_the_round_is_full() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(1, 2, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    join_as(&mut r, &c, "b", 1001, t0).unwrap();
    let late = join_as(&mut r, &c, "c", 1002, t0).unwrap();
    assert_eq!(late.round, 2);
    assert_eq!(
        late.note,
        "round 1 is full (max 2 nodes): waiting for a later round"
    );
    assert_eq!(
        r.heartbeat("job", "a", 1, t0).unwrap(),
        RoundStatus::Running
    );
    // b leaves: the round ends without counting a restart; c was first to wait, and a
    // rejoining closes round 2 at max.
    r.leave("job", "b", t0);
    assert_eq!(ended(&mut r, "a", 1, t0).reason, EndReason::NodeLeft);
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    assert_eq!(
        round_of(&mut r, "c", 0, t0),
        Some((2, 0, vec!["a".into(), "c".into()], 1))
    );
}

#[test]
fn a_new_node_below_max_ends_the_round() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(1, 3, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    r.tick(t0 + LAST_CALL);
    assert_eq!(round_of(&mut r, "a", 0, t0 + LAST_CALL).unwrap().2, ["a"]);
    let t1 = t0 + LAST_CALL * 2;
    let joined = join_as(&mut r, &c, "b", 1001, t1).unwrap();
    assert_eq!(joined.note, "round 1 ended to take this node in");
    let end = ended(&mut r, "a", 1, t1);
    assert_eq!((end.reason, end.restart_count), (EndReason::NodeJoined, 0));
    assert_eq!(
        end.detail,
        "node b on 127.0.0.1 joined; round 1 had 1 of max 3 nodes"
    );
    join_as(&mut r, &c, "a", 1000, t1).unwrap();
    r.tick(t1 + LAST_CALL);
    // a keeps rank 0: members are in first-join order.
    assert_eq!(
        round_of(&mut r, "b", 0, t1 + LAST_CALL).unwrap().2,
        ["a", "b"]
    );
}

#[test]
fn a_silent_node_is_lost_and_counted() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(1, 2, "", 2));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    join_as(&mut r, &c, "b", 1001, t0).unwrap();
    let t1 = t0 + TIMEOUT / 2;
    r.heartbeat("job", "a", 1, t1).unwrap();
    r.tick(t0 + TIMEOUT + Duration::from_millis(1));
    let end = ended(&mut r, "a", 1, t1 + TIMEOUT / 2);
    assert_eq!((end.reason, end.restart_count), (EndReason::NodeLost, 1));
    assert_eq!(
        end.detail,
        "node b on 127.0.0.1 silent for more than 15.0 s"
    );
    assert!(matches!(
        r.heartbeat("job", "b", 1, t1),
        Err(Refusal::NotFound(_))
    ));
    let t2 = t1 + TIMEOUT / 2;
    join_as(&mut r, &c, "a", 1000, t2).unwrap();
    r.tick(t2 + LAST_CALL);
    assert_eq!(
        round_of(&mut r, "a", 1, t2 + LAST_CALL),
        Some((2, 1, vec!["a".into()], 0))
    );
}

#[test]
fn failures_count_until_max_restarts_then_the_job_fails_with_the_first() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 1));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    let (counted, _) = r
        .report("job", "a", 1, 0, TaskStatus::Exited(3), "boom\n".into(), t0)
        .unwrap();
    assert!(counted);
    let end = ended(&mut r, "a", 1, t0);
    assert_eq!(
        (end.reason, end.restart_count, end.detail.as_str()),
        (
            EndReason::TaskFailed,
            1,
            "task worker:0 (local task 0 of node a on 127.0.0.1) exited with status 3 in round 1"
        )
    );
    // A report for the ended round changes nothing.
    let (counted, note) = r
        .report(
            "job",
            "a",
            1,
            0,
            TaskStatus::Signaled(15),
            String::new(),
            t0,
        )
        .unwrap();
    assert!(!counted, "{note}");
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    assert_eq!(round_of(&mut r, "a", 1, t0).unwrap().1, 1);
    r.report("job", "a", 2, 0, TaskStatus::Signaled(9), String::new(), t0)
        .unwrap();
    let RoundStatus::JobDone(done) = r.heartbeat("job", "a", 2, t0).unwrap() else {
        panic!("the job goes on past max restarts");
    };
    assert!(!done.succeeded);
    let first = done.first_failure.as_ref().unwrap();
    assert_eq!((first.round, first.stderr_tail.as_str()), (1, "boom\n"));
    assert_eq!(
        done.to_string(),
        "the job failed in round 2: 2 failures, more than max restarts 1; the last: task \
         worker:0 (local task 0 of node a on 127.0.0.1) was killed by signal 9 in round 2; \
         first failure: task worker:0 (local task 0 of node a on 127.0.0.1) exited with status \
         3 in round 1"
    );
    let err = join_as(&mut r, &c, "a", 1000, t0).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("rendezvous \"job\" is finished (the job failed"),
        "{err}"
    );
}

#[test]
fn the_first_task_succeeding_ends_the_job() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "chief=1", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    join_as(&mut r, &c, "b", 1001, t0).unwrap();
    // b runs worker 0: its success is not the job's.
    let (counted, note) = r
        .report("job", "b", 1, 0, TaskStatus::Exited(0), String::new(), t0)
        .unwrap();
    assert!(counted);
    assert_eq!(
        note,
        "task worker:0 succeeded; the job ends when task chief:0 does"
    );
    assert_eq!(
        r.heartbeat("job", "b", 1, t0).unwrap(),
        RoundStatus::Running
    );
    r.report("job", "a", 1, 0, TaskStatus::Exited(0), String::new(), t0)
        .unwrap();
    let Waited::Done(done) = r.wait("job", "b", 1, t0).unwrap() else {
        panic!("not done");
    };
    assert!(done.succeeded);
    assert_eq!(done.detail, "task chief:0 (node a on 127.0.0.1) succeeded");
}

#[test]
fn refusals_name_the_values() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    let other = config(2, 3, "chief=1", 0);
    let err = join_as(&mut r, &other, "b", 1001, t0).unwrap_err();
    assert!(matches!(err, Refusal::FailedPrecondition(_)));
    assert_eq!(
        err.to_string(),
        "rendezvous \"job\" runs a job with another config: nodes 2:4 (this node: 2:3), layout \
         \"\" (this node: \"chief=1\")"
    );
    let err = join_as(&mut r, &c, "b", 1000, t0).unwrap_err();
    assert!(matches!(err, Refusal::AlreadyExists(_)));
    assert_eq!(
        err.to_string(),
        "address 127.0.0.1:1000 is held by node a on 127.0.0.1 (heard from 0 ms ago); it is free \
         when that node leaves or is silent for 15.0 s"
    );
    let err = join_as(&mut r, &c, "b c", 1001, t0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid node id \"b c\": ' ' at byte 1; ids use letters, digits, '.', '_', '-'"
    );
    let mut args = JoinArgs {
        rdzv_id: "job".into(),
        config: c.clone(),
        node_id: None,
        host: "host name".into(),
        ports: vec![1],
        name: String::new(),
    };
    assert_eq!(
        r.join(args.clone(), t0).unwrap_err().to_string(),
        "invalid host \"host name\": ' ' at byte 4"
    );
    args.host = "h".into();
    args.ports = vec![1, 2];
    assert_eq!(
        r.join(args, t0).unwrap_err().to_string(),
        "the node gives 2 ports for 1 tasks per node"
    );
    assert!(matches!(
        r.wait("job", "zz", 0, t0),
        Err(Refusal::NotFound(_))
    ));
    assert!(matches!(
        r.wait("nojob", "a", 0, t0),
        Err(Refusal::NotFound(_))
    ));
}

#[test]
fn rejoining_while_a_member_ends_the_round() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(1, 1, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    let joined = join_as(&mut r, &c, "a", 1000, t0).unwrap();
    assert_eq!(joined.round, 2, "{}", joined.note);
    assert_eq!(ended(&mut r, "a", 1, t0).reason, EndReason::NodeLeft);
    assert_eq!(round_of(&mut r, "a", 1, t0).unwrap().0, 2);
}

#[test]
fn a_retried_join_is_the_same_node() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    let Waited::Pending(p) = r.wait("job", "a", 0, t0).unwrap() else {
        panic!("a retried join counted twice");
    };
    assert_eq!(p.waiting, 1);
}

#[test]
fn jobs_without_nodes_are_forgotten_and_the_job_limit_holds() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 0));
    for i in 0..4 {
        let mut args = JoinArgs {
            rdzv_id: format!("job{i}"),
            config: c.clone(),
            node_id: Some("a".into()),
            host: "h".into(),
            ports: vec![1],
            name: String::new(),
        };
        r.join(args.clone(), t0).unwrap();
        if i == 3 {
            args.rdzv_id = "job4".into();
            assert_eq!(
                r.join(args, t0).unwrap_err().to_string(),
                "this rendezvous serves 4 jobs, its limit; \"job4\" cannot start"
            );
        }
    }
    r.tick(t0 + TIMEOUT + Duration::from_millis(1));
    assert_eq!(r.jobs.len(), 4, "kept while nodes are just gone");
    r.tick(t0 + TIMEOUT * 2 + Duration::from_millis(2));
    assert!(r.jobs.is_empty());
}
