//! What only the etcd backend has: etcd's own failures (a leader lost while a round forms,
//! a cluster that cannot be reached, TLS), job state every agent reads alike, and a record
//! that does not load. Each test runs its own etcd cluster from Debian's etcd-server.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use elastic::{
    ClientOptions, EndReason, EtcdOptions, EtcdTls, Join, RendezvousClient, RoundStatus,
    TaskStatus, Waited,
};
use etcd_client::{EventType, GetOptions, WatchOptions};
use etcd_cluster::EtcdCluster;

use crate::common::{config, fast, join, names, refusing, round, run, setup};

/// Where the etcd backend keeps job `job`: its record and, beside it, the joins waiting.
const JOB: &str = "/tfcluster/rendezvous/job/";
const RECORD: &str = "/tfcluster/rendezvous/job/state";
const JOINS: &str = "/tfcluster/rendezvous/job/~join/";

async fn cluster(members: usize) -> EtcdCluster {
    setup(move || EtcdCluster::start_local(members)).await
}

/// A client of its own, as another agent process would have.
async fn agent(options: &EtcdOptions) -> RendezvousClient {
    RendezvousClient::etcd(options.clone(), fast())
        .await
        .unwrap()
}

#[test]
fn a_leader_lost_while_a_round_forms_closes_it_once_with_the_same_members() {
    run(async {
        const LAST_CALL: Duration = Duration::from_millis(800);
        let etcd = cluster(3).await;
        let options = EtcdOptions::new(etcd.endpoints())
            .unwrap()
            .with_last_call(LAST_CALL);
        let (ca, cb, cc) = (
            agent(&options).await,
            agent(&options).await,
            agent(&options).await,
        );
        let leader = etcd.wait_leader(Duration::from_secs(10));
        let c = config("2:3", 0);
        let mut a = join(&ca, "job", &c, 0).await;
        // b's join brings the round to min: its last call runs from no earlier than now.
        let min = Instant::now();
        let mut b = join(&cb, "job", &c, 1).await;
        // The leader, if it still leads by its own word, is killed at once: both agents wait
        // out the last call and race to close the round while etcd elects again.
        let (etcd, old, killed) = tokio::task::spawn_blocking(move || {
            let mut etcd = etcd;
            let old = etcd.status(leader);
            etcd.kill(leader);
            (etcd, old, Instant::now())
        })
        .await
        .unwrap();
        let old = old.expect("the leader answers");
        assert_eq!(old.leader, old.id, "m{leader} no longer leads: {old:?}");
        assert!(
            killed < min + LAST_CALL,
            "the leader was killed {:?} after b's join was sent: the {LAST_CALL:?} last call \
             may have closed the round first",
            killed - min
        );
        let (ra, rb) = tokio::join!(round(&ca, &mut a), round(&cb, &mut b));
        assert_eq!((ra.number(), rb.number()), (1, 1));
        assert_eq!(names(&ra), ["agent0", "agent1"]);
        assert_eq!(ra.members(), rb.members());
        assert_eq!(ra.cluster_spec(), rb.cluster_spec());
        // One round formed: a third node ends round 1 to come in, and the next is round 2.
        let mut n = join(&cc, "job", &c, 2).await;
        assert_eq!(n.note(), "round 1 ended to take this node in");
        ca.rejoin(&mut a).await.unwrap();
        cb.rejoin(&mut b).await.unwrap();
        let (ra, _, rn) = tokio::join!(round(&ca, &mut a), round(&cb, &mut b), round(&cc, &mut n));
        assert_eq!((ra.number(), rn.number()), (2, 2));
        assert_eq!(names(&rn), ["agent0", "agent1", "agent2"]);
        // etcd's own word: the members left follow one leader, elected in a later term, and
        // not the killed one.
        let elected = tokio::task::spawn_blocking(move || {
            etcd.elected_after(leader, &old, Duration::from_secs(10))
        });
        elected.await.unwrap().unwrap();
    });
}

#[test]
fn an_unreachable_etcd_fails_each_call_within_the_retry_naming_the_endpoints() {
    run(async {
        // Ports nothing listens on, held so none does.
        let (_first, first) = refusing();
        let (_second, second) = refusing();
        let list = format!("etcd://{first},{second}");
        let options: EtcdOptions = list.parse().unwrap();
        let retry = Duration::from_secs(1);
        let client = RendezvousClient::etcd(options, fast().with_retry_for(retry))
            .await
            .unwrap();
        let start = Instant::now();
        let err = client
            .join(&Join::new("job", config("2", 0), vec![1]))
            .await
            .unwrap_err();
        let waited = start.elapsed();
        assert!(
            waited >= retry && waited < retry + Duration::from_secs(3),
            "{waited:?}"
        );
        let text = err.to_string();
        assert!(matches!(err, elastic::Error::Unreachable { .. }), "{text}");
        assert!(
            text.starts_with(&format!("rendezvous at {list} unreachable for ")),
            "{text}"
        );
        // Each try's cause names the cluster too.
        assert!(text.contains(&format!("etcd at {list}")), "{text}");
    });
}

#[test]
fn tls_to_etcd_forms_rounds_and_a_client_without_its_certificate_is_refused() {
    run(async {
        let (etcd, files) = setup(|| EtcdCluster::start_local_tls(3)).await;
        let read = |p: &std::path::Path| std::fs::read(p).unwrap();
        let ca = read(&files.ca);
        let tls = EtcdTls::new(ca.clone())
            .with_identity(read(&files.client_cert), read(&files.client_key));
        let options = EtcdOptions::new(etcd.endpoints()).unwrap().with_tls(tls);
        let (c1, c2) = (agent(&options).await, agent(&options).await);
        let c = config("2", 0);
        let (mut a, mut b) = (join(&c1, "job", &c, 0).await, join(&c2, "job", &c, 1).await);
        let (ra, rb) = tokio::join!(round(&c1, &mut a), round(&c2, &mut b));
        assert_eq!(ra.cluster_spec(), rb.cluster_spec());

        // The CA alone: the members ask for a client certificate, and this one has none.
        let anonymous = EtcdOptions::new(etcd.endpoints())
            .unwrap()
            .with_tls(EtcdTls::new(ca));
        // Its refusal is the subject, not how fast it comes: a busy machine (the test command
        // runs TensorFlow jobs beside these tests) can take more than a fraction of a second
        // to refuse a handshake.
        let client = RendezvousClient::etcd(
            anonymous.clone(),
            fast().with_retry_for(Duration::from_secs(5)),
        )
        .await
        .unwrap();
        let err = client
            .join(&Join::new("job2", c, vec![1]))
            .await
            .unwrap_err();
        // TLS 1.3 finishes the client's side of the handshake before the member checks the
        // certificate: the client reads the member's alert (BadCertificate), or the close
        // that follows it, or writes its request into the closed connection first.
        let text = err.to_string();
        assert!(
            text.contains(&format!("etcd at {anonymous}"))
                && ["BadCertificate", "connection closed", "broken pipe"]
                    .iter()
                    .any(|why| text.contains(why)),
            "{err}"
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

#[test]
fn every_agent_reads_the_same_restart_count_and_first_failure() {
    run(async {
        let etcd = cluster(3).await;
        let options = EtcdOptions::new(etcd.endpoints()).unwrap();
        let (ca, cb) = (agent(&options).await, agent(&options).await);
        let c = config("2", 1);
        let (mut a, mut b) = (join(&ca, "job", &c, 0).await, join(&cb, "job", &c, 1).await);
        let (ra, rb) = tokio::join!(round(&ca, &mut a), round(&cb, &mut b));
        let mut beats = cb.heartbeats(&b, &rb);
        ca.report(&a, ra.number(), 0, TaskStatus::Exited(3), "first\n")
            .await
            .unwrap();
        let RoundStatus::Ended(end) = beats.ended().await.unwrap() else {
            panic!("round 1 goes on");
        };
        assert_eq!((end.reason, end.restart_count), (EndReason::TaskFailed, 1));
        ca.rejoin(&mut a).await.unwrap();
        cb.rejoin(&mut b).await.unwrap();
        let (ra, rb) = tokio::join!(round(&ca, &mut a), round(&cb, &mut b));
        assert_eq!((ra.restart_count(), rb.restart_count()), (1, 1));
        cb.report(&b, rb.number(), 0, TaskStatus::Signaled(9), "second\n")
            .await
            .unwrap();
        let (Waited::JobDone(da), Waited::JobDone(db)) = (
            ca.wait_round(&mut a, Duration::from_secs(5)).await.unwrap(),
            cb.wait_round(&mut b, Duration::from_secs(5)).await.unwrap(),
        ) else {
            panic!("the job goes on");
        };
        assert!(!da.succeeded);
        assert_eq!(da.to_string(), db.to_string());
        let first = da.first_failure.unwrap();
        assert_eq!(
            (
                first.node_id.as_str(),
                first.stderr_tail.as_str(),
                first.round
            ),
            (a.node_id(), "first\n", 1)
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

#[test]
fn a_record_that_does_not_load_is_refused_naming_its_key() {
    run(async {
        let etcd = cluster(1).await;
        let options = EtcdOptions::new(etcd.endpoints()).unwrap();
        let key = RECORD;
        let put = etcd.etcdctl(&["put", key, "not a record"]);
        assert!(put.status.success(), "{put:?}");
        let client = agent(&options).await;
        let err = client
            .join(&Join::new("job", config("2", 0), vec![1]))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("DataLoss"), "{text}");
        assert!(
            text.contains(&format!("at {key} in etcd at {options}")),
            "{text}"
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

#[test]
fn joins_that_arrive_together_are_each_answered_once() {
    run(async {
        let etcd = cluster(3).await;
        let options = EtcdOptions::new(etcd.endpoints()).unwrap();
        // More joins than one etcd transaction can fold (42): at least two folds.
        const AGENTS: u16 = 48;
        const ROOM: usize = 42;
        // Folding is the subject, not its speed: 49 joins at once on a busy machine (the test
        // command runs TensorFlow jobs beside these tests) took more than `fast`'s 2 s.
        let patient = ClientOptions::default()
            .with_connect_timeout(Duration::from_secs(5))
            .with_rpc_timeout(Duration::from_secs(30))
            .with_retry_for(Duration::from_secs(30));
        let mut agents = Vec::new();
        for _ in 0..=AGENTS {
            agents.push(
                RendezvousClient::etcd(options.clone(), patient.clone())
                    .await
                    .unwrap(),
            );
        }
        let c = config(&format!("{AGENTS}:{AGENTS}"), 0);
        let joins = agents.iter().enumerate().map(|(i, client)| {
            // The last one asks for agent 0's port: whichever of the two is folded second is
            // refused, and only it.
            let port = if i == usize::from(AGENTS) {
                0
            } else {
                i as u16
            };
            let join =
                Join::new("job", c.clone(), vec![20_000 + port]).with_name(format!("agent{i}"));
            async move { (client.clone(), client.join(&join).await) }
        });
        let (mut nodes, mut refused) = (Vec::new(), Vec::new());
        for (client, joined) in futures_util::future::join_all(joins).await {
            match joined {
                Ok(node) => nodes.push((client, node)),
                Err(e) => refused.push(e.to_string()),
            }
        }
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("address 127.0.0.1:20000 is held by"),
            "{refused:?}"
        );
        let rounds = futures_util::future::join_all(
            nodes.iter_mut().map(|(client, node)| round(client, node)),
        )
        .await;
        for r in &rounds {
            assert_eq!((r.number(), r.members().len()), (1, usize::from(AGENTS)));
            assert_eq!(r.members(), rounds[0].members());
        }
        // Every join's request and answer goes (a joiner deletes its answer in the
        // background): only the record and the live keys stay.
        let keys = || {
            let out = etcd.etcdctl(&["get", "--prefix", "--keys-only", JOB]);
            let out = String::from_utf8_lossy(&out.stdout).into_owned();
            out.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let give_up = Instant::now() + Duration::from_secs(5);
        let mut left = keys();
        while left.iter().any(|k| k.contains('~')) && Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = keys();
        }
        assert_eq!(left.len(), usize::from(AGENTS) + 1, "{left:?}");
        assert!(left.iter().all(|k| !k.contains('~')), "{left:?}");
        // Folded indeed: every join in one of the record's writes, none past the room, and at
        // least two writes of several joins each (one write per join would be 49 of one).
        let folds = folds(etcd.endpoints()).await;
        assert_eq!(
            folds.iter().sum::<usize>(),
            usize::from(AGENTS) + 1,
            "{folds:?}"
        );
        assert!(folds.iter().all(|&joins| joins <= ROOM), "{folds:?}");
        assert!(
            folds.iter().filter(|&&joins| joins > 1).count() >= 2,
            "joins folded by each write of the record: {folds:?}"
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

/// How many joins each write of job `job`'s record folded in, oldest first, from etcd's
/// history of the job's keys: the transaction that writes the record deletes the request
/// (`~join/TOKEN`) of every join it answers. Writes that answer no join are left out.
async fn folds(endpoints: Vec<String>) -> Vec<usize> {
    let mut client = etcd_client::Client::connect(endpoints, None).await.unwrap();
    let now = client
        .get(JOB, Some(GetOptions::new().with_prefix().with_count_only()))
        .await
        .unwrap()
        .header()
        .expect("a response has a header")
        .revision();
    let mut history = client
        .watch(
            JOB,
            Some(WatchOptions::new().with_prefix().with_start_revision(1)),
        )
        .await
        .unwrap();
    // By revision: whether it wrote the record, and how many join requests it deleted.
    let mut revisions = BTreeMap::<i64, (bool, usize)>::new();
    // Every revision is a write of the job's keys: nothing else writes to this cluster.
    while revisions
        .last_key_value()
        .is_none_or(|(&last, _)| last < now)
    {
        let answer = history.message().await.unwrap().expect("the watch goes on");
        for event in answer.events() {
            let kv = event.kv().expect("an event has its key");
            let revision = revisions.entry(kv.mod_revision()).or_default();
            match event.event_type() {
                EventType::Put => revision.0 |= kv.key() == RECORD.as_bytes(),
                EventType::Delete => {
                    revision.1 += usize::from(kv.key().starts_with(JOINS.as_bytes()))
                }
            }
        }
    }
    revisions
        .into_values()
        .filter(|&(record, joins)| record && joins > 0)
        .map(|(_, joins)| joins)
        .collect()
}

/// Two deployments sharing one etcd keep apart by prefix: a job under another prefix is
/// written there, and a job of the same id under the default prefix is another job.
#[test]
fn a_prefix_keeps_jobs_apart() {
    run(async {
        let etcd = cluster(1).await;
        let default = EtcdOptions::new(etcd.endpoints()).unwrap();
        let other = default.clone().with_prefix("/team-b/rdzv");
        let c = config("1", 0);
        let (ca, cb) = (agent(&default).await, agent(&other).await);
        let mut a = join(&ca, "job", &c, 0).await;
        let mut b = join(&cb, "job", &c, 0).await;
        // Each formed its own one-node round 1 (in one job of at most one node, the second
        // would have waited for a round 2).
        for (client, node) in [(&ca, &mut a), (&cb, &mut b)] {
            let round = round(client, node).await;
            assert_eq!((round.number(), names(&round)), (1, vec!["agent0"]));
        }
        let kv = etcd_client::Client::connect(etcd.endpoints(), None)
            .await
            .unwrap();
        let count = |prefix: &'static str| {
            let mut kv = kv.clone();
            async move {
                kv.get(
                    prefix,
                    Some(GetOptions::new().with_prefix().with_count_only()),
                )
                .await
                .unwrap()
                .count()
            }
        };
        assert_eq!(count("/team-b/rdzv/job/state").await, 1);
        assert_eq!(count(RECORD).await, 1);
    });
}
