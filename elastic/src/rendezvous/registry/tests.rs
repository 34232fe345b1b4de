//! A registry driven by hand, the clock stepped instead of slept: the helpers every file's
//! tests share, and the tests of the registry as a whole (its job limit and a caller's share
//! of it, forgetting jobs, unknown ids).

use std::time::Duration;

use super::*;
use crate::outcome::RoundEnd;
use crate::rendezvous::caller::Caller;
use crate::rendezvous::credentials::{Credentials, Digest};
use crate::{JobConfig, NodeRange};

pub(super) const LAST_CALL: Duration = Duration::from_secs(3);
pub(super) const TIMEOUT: Duration = Duration::from_secs(15);

pub(super) fn registry() -> Registry {
    Registry::new(Settings {
        last_call: LAST_CALL,
        timeout: TIMEOUT,
        max_jobs: 4,
        token: None,
        metrics: Default::default(),
    })
}

pub(super) fn config(min: u32, max: u32, layout: &str, max_restarts: u32) -> JobConfig {
    JobConfig::new(NodeRange::new(min, max).unwrap(), 1)
        .unwrap()
        .with_layout(layout.parse().unwrap())
        .unwrap()
        .with_max_restarts(max_restarts)
}

pub(super) fn join_as(
    r: &mut Registry,
    c: &JobConfig,
    id: &str,
    port: u16,
    now: Instant,
) -> Result<Joined, Refusal> {
    join_on(r, c, id, "127.0.0.1", port, now)
}

/// Node `id` joins (or joins again) from `host`.
pub(super) fn join_on(
    r: &mut Registry,
    c: &JobConfig,
    id: &str,
    host: &str,
    port: u16,
    now: Instant,
) -> Result<Joined, Refusal> {
    r.join(
        JoinArgs {
            rdzv_id: "job".into(),
            config: c.clone(),
            node_id: Some(id.into()),
            host: host.into(),
            ports: vec![port],
            name: String::new(),
            peer: None,
            credentials: Credentials::default(),
        },
        &node_proof(id),
        now,
    )
}

/// Node `id`'s report that its local task `local` of `round` ended with `status`, its
/// stderr ending with `tail`, after no progress.
pub(super) fn report(
    r: &mut Registry,
    id: &str,
    round: u64,
    local: u32,
    status: crate::TaskStatus,
    tail: &str,
    now: Instant,
) -> Result<Reported, Refusal> {
    let task = TaskReport {
        round,
        local_task: local,
        status,
        stderr_tail: tail.to_owned(),
        progressed: false,
    };
    r.report("job", id, task, now)
}

/// What node `id` proves in these tests: no token (an open job), its own secret.
pub(super) fn node_proof(id: &str) -> Proof {
    Proof {
        token: None,
        secret: Some(Digest::keyed("job", &format!("secret of {id}"))),
    }
}

/// The round node `id` holds now, as (number, restart count, member ids, its rank).
pub(super) fn round_of(
    r: &mut Registry,
    id: &str,
    after: u64,
    now: Instant,
) -> Option<(u64, u32, Vec<String>, u32)> {
    match r.wait("job", id, after, now).unwrap() {
        Waited::Round { round, rank } => Some((
            round.number,
            round.round.restart_count(),
            round
                .round
                .members()
                .iter()
                .map(|m| m.node_id.clone())
                .collect(),
            rank,
        )),
        _ => None,
    }
}

pub(super) fn ended(r: &mut Registry, id: &str, round: u64, now: Instant) -> RoundEnd {
    match r.heartbeat("job", id, round, (0, 0), None, now).unwrap() {
        RoundStatus::Ended(end) => end,
        other => panic!("round {round} did not end: {other:?}"),
    }
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
            peer: None,
            credentials: Credentials::default(),
        };
        r.join(args.clone(), &Proof::default(), t0).unwrap();
        if i == 3 {
            args.rdzv_id = "job4".into();
            assert_eq!(
                r.join(args, &Proof::default(), t0).unwrap_err().to_string(),
                "this rendezvous serves 4 jobs, its limit; \"job4\" cannot start"
            );
        }
    }
    r.tick(t0 + TIMEOUT + Duration::from_millis(1));
    assert_eq!(r.jobs.len(), 4, "kept while nodes are just gone");
    r.tick(t0 + TIMEOUT * 2 + Duration::from_millis(2));
    assert!(r.jobs.is_empty());
}

#[test]
fn unknown_jobs_and_nodes_are_not_found() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 4, "", 0));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
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
fn observing_keeps_no_node_alive_and_answers_the_running_round() {
    let (mut r, t0, c) = (registry(), Instant::now(), config(2, 2, "", 5));
    assert!(matches!(
        r.observe("job", 0, 0, t0),
        Err(Refusal::NotFound(m)) if m.contains("\"job\"")
    ));
    join_as(&mut r, &c, "a", 1000, t0).unwrap();
    join_as(&mut r, &c, "b", 1001, t0).unwrap();
    let Waited::Round { round, rank } = r.observe("job", 0, 0, t0).unwrap() else {
        panic!("round 1 runs");
    };
    assert_eq!((round.number, rank), (1, 0));
    let job = round.round.job();
    assert_ne!(job, 0);
    // Round 1 of another job under this id (a restarted rendezvous) is no reference.
    assert!(matches!(
        r.observe("job", job ^ 1, 1, t0),
        Ok(Waited::Round { .. })
    ));
    assert!(matches!(
        r.observe("job", job, 1, t0),
        Ok(Waited::Pending(_))
    ));
    // A round number past the job's was seen of another job under this id.
    assert!(matches!(
        r.observe("job", job, 7, t0),
        Ok(Waited::Round { .. })
    ));
    // Observed all along, the nodes are still lost when they fall silent.
    let mut now = t0;
    while now < t0 + TIMEOUT * 2 {
        now += Duration::from_secs(1);
        r.observe("job", job, 1, now).unwrap();
        r.tick(now);
    }
    assert!(matches!(
        r.observe("job", 0, 0, now),
        Ok(Waited::Pending(_))
    ));
    let end = r.jobs["job"].ended.back().unwrap();
    assert_eq!((end.round, end.reason), (1, crate::EndReason::NodeLost));
}

#[test]
fn one_caller_may_create_a_sixteenth_of_the_jobs() {
    let mut r = Registry::new(Settings {
        last_call: LAST_CALL,
        timeout: TIMEOUT,
        max_jobs: 32,
        token: None,
        metrics: Default::default(),
    });
    let (t0, c) = (Instant::now(), config(2, 2, "", 0));
    let from = |peer: [u8; 4], job: &str| JoinArgs {
        rdzv_id: job.into(),
        config: c.clone(),
        node_id: Some("a".into()),
        host: "h".into(),
        ports: vec![1],
        name: String::new(),
        peer: Some(Caller::of(peer.into())),
        credentials: Credentials::default(),
    };
    r.join(from([10, 0, 0, 1], "j1"), &Proof::default(), t0)
        .unwrap();
    r.join(from([10, 0, 0, 1], "j2"), &Proof::default(), t0)
        .unwrap();
    let err = r
        .join(from([10, 0, 0, 1], "j3"), &Proof::default(), t0)
        .unwrap_err();
    assert!(matches!(err, Refusal::ResourceExhausted(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "10.0.0.1 created 2 of this rendezvous's jobs, its share of 2 (a sixteenth of 32); \
         \"j3\" cannot start until one of them ends"
    );
    // Another caller has its own share; joining a job another created is no creation.
    r.join(from([10, 0, 0, 2], "j3"), &Proof::default(), t0)
        .unwrap();
    let mut again = from([10, 0, 0, 1], "j3");
    again.node_id = Some("b".into());
    again.ports = vec![2];
    r.join(again, &Proof::default(), t0).unwrap();
    // An IPv6 caller is its /64: another address in it has no share of its own.
    let from_v6 = |ip: &str, job: &str| JoinArgs {
        peer: Some(Caller::of(ip.parse().unwrap())),
        ..from([0; 4], job)
    };
    for (ip, job) in [("2001:db8:0:1::1", "v1"), ("2001:db8:0:1::2", "v2")] {
        r.join(from_v6(ip, job), &Proof::default(), t0).unwrap();
    }
    let err = r
        .join(from_v6("2001:db8:0:1:ffff::3", "v3"), &Proof::default(), t0)
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("2001:db8:0:1::/64 created 2 of this rendezvous's jobs"),
        "{err}"
    );
    r.join(from_v6("2001:db8:0:2::1", "v3"), &Proof::default(), t0)
        .unwrap();
}
