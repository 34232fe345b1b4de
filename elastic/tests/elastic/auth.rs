//! Tokens and node secrets: a job with a token refuses joins and observers without it, a
//! join under another node's id is refused (both backends); over gRPC, every forged node
//! call (no secret, a wrong one, a wrong token) is refused and changes nothing, a server's
//! own token guards every job, and no value shows in any `Debug`.

use std::time::Duration;

use elastic::{ClientOptions, Join, RendezvousClient, RendezvousServer, RoundStatus, Token, proto};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request};

use crate::common::{
    Backend, LAST_CALL, Rdzv, TIMEOUT, client, config, fast, join, on_both_backends, round, run,
    server_with,
};

fn token(text: &str) -> Token {
    Token::new(format!("{text}-0123456789abcdef")).unwrap()
}

/// `client`'s watch of job `job`, which must be refused.
async fn watch_refused(client: &RendezvousClient) -> elastic::Error {
    client
        .watch_round("job", None, Duration::ZERO)
        .await
        .unwrap_err()
}

/// The code of a refused call.
fn code(error: &elastic::Error) -> elastic::Code {
    match error {
        elastic::Error::Refused { code, .. } => *code,
        other => panic!("not refused: {other}"),
    }
}

async fn a_job_with_a_token_refuses_joins_and_observers_without_it(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let ours = rdzv.client_with(fast().with_token(token("ours"))).await;
    let c = config("1:3", 0);
    let mut a = join(&ours, "job", &c, 0).await;
    assert_eq!(round(&ours, &mut a).await.number(), 1);

    for options in [fast(), fast().with_token(token("theirs"))] {
        let other = rdzv.client_with(options).await;
        let join = Join::new("job", c.clone(), vec![20_001]);
        let err = other.join(&join).await.unwrap_err();
        assert_eq!(code(&err), elastic::Code::Unauthenticated, "{err}");
        assert!(err.to_string().contains("Join to job \"job\""), "{err}");
        let err = watch_refused(&other).await;
        assert_eq!(code(&err), elastic::Code::Unauthenticated, "{err}");
    }
    // Nothing changed: the round runs, and a holder of the token sees it.
    assert_eq!(ours.heartbeat(&a, 1).await.unwrap(), RoundStatus::Running);
    match ours.watch_round("job", None, Duration::ZERO).await.unwrap() {
        elastic::Watched::Round(r) => assert_eq!(r.number(), 1),
        other => panic!("{other:?}"),
    }
    rdzv.shutdown().await;
}

async fn a_join_under_another_nodes_id_is_refused(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = config("1:3", 0);
    let mut a = join(&client, "job", &c, 0).await;
    assert_eq!(round(&client, &mut a).await.number(), 1);
    // Another agent (its own secret) joins as a, with its own address: refused.
    let attacker = rdzv.client().await;
    let forged = Join::new("job", c.clone(), vec![20_009]).with_node_id(a.node_id());
    let err = attacker.join(&forged).await.unwrap_err();
    assert_eq!(code(&err), elastic::Code::PermissionDenied, "{err}");
    assert!(
        err.to_string().contains(&format!(
            "node \"{}\" of job \"job\": wrong or missing node secret (Join)",
            a.node_id()
        )),
        "{err}"
    );
    // a's round runs on, and a joins again with its own secret.
    assert_eq!(client.heartbeat(&a, 1).await.unwrap(), RoundStatus::Running);
    client.rejoin(&mut a).await.unwrap();
    assert_eq!(round(&client, &mut a).await.number(), 2);
    rdzv.shutdown().await;
}

on_both_backends!(
    a_job_with_a_token_refuses_joins_and_observers_without_it,
    a_join_under_another_nodes_id_is_refused
);

/// A request carrying `token` (none: no metadata) and `secret`.
/// A gRPC stub of the rendezvous at `addr`, for calls no client of ours would make.
async fn raw_stub(
    addr: std::net::SocketAddr,
) -> proto::rendezvous_client::RendezvousClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    proto::rendezvous_client::RendezvousClient::new(channel)
}

fn forged<T>(message: T, token: Option<&str>, secret: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token {
        let value = MetadataValue::try_from(format!("Bearer {token}")).unwrap();
        request.metadata_mut().insert("authorization", value);
    }
    if let Some(secret) = secret {
        let value = MetadataValue::try_from(secret).unwrap();
        request
            .metadata_mut()
            .insert("tfcluster-node-secret", value);
    }
    request
}

#[test]
fn forged_node_calls_over_grpc_are_refused_and_change_nothing() {
    run(async {
        let options = RendezvousServer::builder().with_last_call(LAST_CALL);
        let server = server_with(options).await;
        let addr = server.local_addr();
        let job_token = token("job");
        let ours =
            RendezvousClient::new(addr.to_string(), fast().with_token(job_token.clone())).unwrap();
        let c = config("1:3", 0);
        let mut a = join(&ours, "job", &c, 0).await;
        assert_eq!(round(&ours, &mut a).await.number(), 1);
        let node_id = a.node_id().to_owned();

        let mut stub = raw_stub(addr).await;
        let right = "job-0123456789abcdef".to_owned();
        let wrong_secret = "0123456789abcdef0123456789abcdef";
        // (token, secret): the right token without a secret or with a wrong one (a node's
        // call forged by a holder of the token), and a wrong or missing token.
        let forgeries = [
            (Some(right.as_str()), None, Code::PermissionDenied),
            (
                Some(right.as_str()),
                Some(wrong_secret),
                Code::PermissionDenied,
            ),
            (None, Some(wrong_secret), Code::Unauthenticated),
            (
                Some("another-0123456789abcdef"),
                None,
                Code::Unauthenticated,
            ),
        ];
        for (token, secret, expected) in forgeries {
            let wait = proto::WaitRoundRequest {
                rdzv_id: "job".into(),
                node_id: node_id.clone(),
                after_round: 0,
                poll_ms: 0,
                seen: None,
            };
            let status = stub
                .wait_round(forged(wait, token, secret))
                .await
                .unwrap_err();
            assert_eq!(status.code(), expected, "WaitRound: {status:?}");
            let beat = proto::HeartbeatRequest {
                rdzv_id: "job".into(),
                node_id: node_id.clone(),
                round: 1,
                poll_ms: 0,
                chief_restarts_seen: 0,
                notice: Some(hour_notice()),
                notices_seen: 0,
            };
            let status = stub
                .heartbeat(forged(beat, token, secret))
                .await
                .unwrap_err();
            assert_eq!(status.code(), expected, "Heartbeat: {status:?}");
            // Exit 0 as rank 0 would end the job as a success.
            let report = proto::ReportRequest {
                rdzv_id: "job".into(),
                node_id: node_id.clone(),
                round: 1,
                local_task: 0,
                status: Some(proto::TaskStatus {
                    status: Some(proto::task_status::Status::ExitCode(0)),
                }),
                stderr_tail: String::new(),
                progressed: false,
            };
            let status = stub
                .report(forged(report, token, secret))
                .await
                .unwrap_err();
            assert_eq!(status.code(), expected, "Report: {status:?}");
            assert!(!status.message().contains(&right), "{status:?}");
            // A forged departure would keep a's host out of the job for an hour.
            let leave = proto::LeaveRequest {
                rdzv_id: "job".into(),
                node_id: node_id.clone(),
                notice: Some(hour_notice()),
            };
            let status = stub.leave(forged(leave, token, secret)).await.unwrap_err();
            assert_eq!(status.code(), expected, "Leave: {status:?}");
            // A join under a's id with another address, which would send worker:0 elsewhere.
            let join = proto::JoinRequest {
                rdzv_id: "job".into(),
                config: Some(proto::JobConfig {
                    min_nodes: 1,
                    max_nodes: 3,
                    tasks_per_node: 1,
                    layout: Vec::new(),
                    max_restarts: 0,
                    ..Default::default()
                }),
                host: "192.0.2.66".into(),
                ports: vec![6666],
                node_id: node_id.clone(),
                name: String::new(),
            };
            let status = stub.join(forged(join, token, secret)).await.unwrap_err();
            assert_eq!(status.code(), expected, "Join: {status:?}");
        }
        // A garbled token is refused as such, naming no value.
        let status = stub
            .watch_rounds(forged(
                proto::WatchRoundsRequest {
                    rdzv_id: "job".into(),
                    ..Default::default()
                },
                Some("short"),
                None,
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
        assert!(status.message().contains("is 5 bytes long"), "{status:?}");

        // The job is unchanged: round 1 runs with a at its own address.
        assert_eq!(ours.heartbeat(&a, 1).await.unwrap(), RoundStatus::Running);
        let elastic::Watched::Round(r) =
            ours.watch_round("job", None, Duration::ZERO).await.unwrap()
        else {
            panic!("no round");
        };
        assert_eq!(
            (r.number(), r.members()[0].ports.as_slice()),
            (1, &[20_000][..])
        );

        // A join without a node id gets a secret drawn by the rendezvous, and only it works.
        let mut new = proto::JoinRequest {
            rdzv_id: "job".into(),
            config: Some(proto::JobConfig {
                min_nodes: 1,
                max_nodes: 3,
                tasks_per_node: 1,
                layout: Vec::new(),
                max_restarts: 0,
                ..Default::default()
            }),
            host: "127.0.0.1".into(),
            ports: vec![20_005],
            ..Default::default()
        };
        let joined = stub
            .join(forged(new.clone(), Some(&right), None))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(joined.node_secret.len(), 32, "{joined:?}");
        new.node_id = joined.node_id.clone();
        let status = stub
            .join(forged(new.clone(), Some(&right), None))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        let again = stub
            .join(forged(new, Some(&right), Some(&joined.node_secret)))
            .await
            .unwrap()
            .into_inner();
        assert!(again.node_secret.is_empty(), "a secret sent back twice");
        drop(job_token);
        server.shutdown().await;
    });
}

#[test]
fn a_servers_own_token_guards_every_job() {
    run(async {
        let options = RendezvousServer::builder()
            .with_last_call(LAST_CALL)
            .with_token(token("server"));
        let server = server_with(options).await;
        let addr = server.local_addr().to_string();
        let c = config("1", 0);
        let without = client(&server);
        let err = without
            .join(&Join::new("any-job", c.clone(), vec![20_000]))
            .await
            .unwrap_err();
        assert_eq!(code(&err), elastic::Code::Unauthenticated, "{err}");
        assert!(
            err.to_string()
                .contains("this rendezvous takes only calls with its token")
        );
        let err = without
            .watch_round("any-job", None, Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(code(&err), elastic::Code::Unauthenticated, "{err}");
        let with = RendezvousClient::new(addr, fast().with_token(token("server"))).unwrap();
        let mut a = join(&with, "any-job", &c, 0).await;
        assert_eq!(round(&with, &mut a).await.number(), 1);
        server.shutdown().await;
    });
}

#[test]
fn ids_longer_than_any_job_s_are_refused_before_anything_is_hashed() {
    run(async {
        let options = RendezvousServer::builder()
            .with_last_call(LAST_CALL)
            .with_token(token("server"));
        let server = server_with(options).await;
        let mut stub = raw_stub(server.local_addr()).await;
        // A stranger's 60 KB id with a wrong 1 KiB bearer: refused for its length, as its
        // message says, not hashed to compare tokens (once under the registry's lock).
        let long = "j".repeat(60_000);
        let bearer = "x".repeat(1024);
        let said = "the rendezvous id is 60000 bytes long, more than any may be (128)";
        let wait = proto::WaitRoundRequest {
            rdzv_id: long.clone(),
            node_id: "n".into(),
            ..Default::default()
        };
        let status = stub.wait_round(forged(wait, Some(&bearer), None)).await;
        let status = status.unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (Code::InvalidArgument, said)
        );
        let query = proto::JobStatusRequest {
            rdzv_id: long.clone(),
            ..Default::default()
        };
        let status = stub.job_status(forged(query, Some(&bearer), None)).await;
        assert_eq!(status.unwrap_err().code(), Code::InvalidArgument);
        let beat = proto::HeartbeatRequest {
            rdzv_id: "job".into(),
            node_id: "n".repeat(129),
            ..Default::default()
        };
        let status = stub.heartbeat(forged(beat, Some(&bearer), None)).await;
        let status = status.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status
                .message()
                .starts_with("the node id is 129 bytes long"),
            "{status:?}"
        );
        server.shutdown().await;
    });
}

#[test]
fn no_token_or_secret_shows_in_any_debug() {
    run(async {
        let secret_token = token("never-shown");
        let options = RendezvousServer::builder()
            .with_last_call(LAST_CALL)
            .with_token(secret_token.clone());
        let client_options = ClientOptions::default().with_token(secret_token.clone());
        let shown = format!("{secret_token:?} {options:?} {client_options:?}");
        let server = server_with(options).await;
        let client =
            RendezvousClient::new(server.local_addr().to_string(), client_options.clone()).unwrap();
        let join = Join::new("job", config("1", 0), vec![20_000]);
        let mut node = client.join(&join).await.unwrap();
        let round = round(&client, &mut node).await;
        let shown = format!("{shown} {client:?} {join:?} {node:?} {round:?}");
        assert!(!shown.contains("never-shown"), "{shown}");
        assert!(shown.contains("Token(<redacted>)"), "{shown}");
        assert!(shown.contains("NodeSecret(<redacted>)"), "{shown}");
        // The error of a bad token names where it came from, not the value.
        let err = Token::new("never-shown\u{1}-0123456789").unwrap_err();
        assert!(!format!("{err} {err:?}").contains("never-shown"), "{err:?}");
        server.shutdown().await;
    });
}

#[test]
fn etcd_keeps_the_hashes_of_token_and_secrets_never_them() {
    run(async {
        let etcd = crate::common::setup(|| etcd_cluster::EtcdCluster::start_local(1)).await;
        let options = elastic::EtcdOptions::new(etcd.endpoints())
            .unwrap()
            .with_last_call(LAST_CALL);
        let job_token = token("kept-out-of-etcd");
        let client = RendezvousClient::etcd(options, fast().with_token(job_token.clone()))
            .await
            .unwrap();
        let c = config("2", 0);
        let (a, b) = tokio::join!(join(&client, "job", &c, 0), join(&client, "job", &c, 1));
        let (mut a, mut b) = (a, b);
        let (ra, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
        assert_eq!((ra.number(), rb.number()), (1, 1));
        let all = etcd.etcdctl(&["get", "--prefix", "/tfcluster/"]);
        assert!(all.status.success(), "{all:?}");
        assert!(
            !String::from_utf8_lossy(&all.stdout).contains("kept-out-of-etcd"),
            "the token is in etcd"
        );
        let value = etcd.etcdctl(&[
            "get",
            "--print-value-only",
            "/tfcluster/rendezvous/job/state",
        ]);
        let mut bytes = value.stdout;
        bytes.pop(); // etcdctl's newline
        let stored = <proto::StoredJob as prost::Message>::decode(bytes.as_slice()).unwrap();
        assert_eq!(stored.token_hmac.len(), 32);
        assert!(stored.nodes.iter().all(|n| n.secret_hmac.len() == 32));
        assert!(!stored.open && stored.nodes.iter().all(|n| !n.open));
        // Another agent without the token is refused by the rules it runs on the record.
        let other =
            RendezvousClient::etcd(elastic::EtcdOptions::new(etcd.endpoints()).unwrap(), fast())
                .await
                .unwrap();
        let err = watch_refused(&other).await;
        assert_eq!(code(&err), elastic::Code::Unauthenticated, "{err}");
        // Anyone who may write the prefix can remove the hashes: the record is then refused,
        // not taken as an open job the stranger may use.
        let mut cleared = stored.clone();
        cleared.token_hmac.clear();
        for node in &mut cleared.nodes {
            node.secret_hmac.clear();
        }
        let mut writer = etcd_client::Client::connect(etcd.endpoints(), None)
            .await
            .unwrap();
        writer
            .put(
                "/tfcluster/rendezvous/job/state",
                prost::Message::encode_to_vec(&cleared),
                None,
            )
            .await
            .unwrap();
        let err = watch_refused(&other).await;
        assert_eq!(code(&err), elastic::Code::DataLoss, "{err}");
        assert!(
            err.to_string()
                .contains("has a 0-byte hash and open = false"),
            "{err}"
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

/// The guide's etcd roles (docs/guide/securing.md, "On etcd"): with etcd's auth on and client
/// certificates as users, an agent whose role may read and write only its job's prefix runs
/// its job, and is refused every other job's keys by etcd itself.
#[test]
fn an_etcd_role_limited_to_its_jobs_prefix_runs_that_job_and_no_other() {
    run(async {
        let (etcd, files) =
            crate::common::setup(|| etcd_cluster::EtcdCluster::start_local_tls(1)).await;
        // etcdctl acts as its certificate's user, "etcd-cluster client": made root first.
        let admin = "etcd-cluster client";
        for args in [
            vec!["user", "add", "root:unused-password"],
            vec!["user", "grant-role", "root", "root"],
            vec!["user", "add", &format!("{admin}:unused-password")],
            vec!["user", "grant-role", admin, "root"],
            vec!["role", "add", "tfcluster-job7"],
            vec![
                "role",
                "grant-permission",
                "tfcluster-job7",
                "--prefix=true",
                "readwrite",
                "/tfcluster/rendezvous/job7/",
            ],
            vec!["user", "add", "job7-agent:unused-password"],
            vec!["user", "grant-role", "job7-agent", "tfcluster-job7"],
            vec!["auth", "enable"],
        ] {
            let out = etcd.etcdctl(&args);
            assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
        }
        let (cert, key) = files.client_as("job7-agent");
        let read = |p: &std::path::Path| std::fs::read(p).unwrap();
        let tls = elastic::EtcdTls::new(read(&files.ca)).with_identity(read(&cert), read(&key));
        let options = elastic::EtcdOptions::new(etcd.endpoints())
            .unwrap()
            .with_last_call(LAST_CALL)
            .with_tls(tls);
        let agent = RendezvousClient::etcd(options, fast().with_token(token("job7")))
            .await
            .unwrap();
        let c = config("1", 0);
        let mut node = join(&agent, "job7", &c, 0).await;
        assert_eq!(round(&agent, &mut node).await.number(), 1);
        let err = agent
            .join(&Join::new("job8", c, vec![20_001]))
            .await
            .unwrap_err();
        assert_eq!(code(&err), elastic::Code::PermissionDenied, "{err}");
        assert!(
            err.to_string().contains("etcdserver: permission denied"),
            "not etcd's refusal: {err}"
        );
        tokio::task::spawn_blocking(move || drop(etcd))
            .await
            .unwrap();
    });
}

/// A spot notice an hour ahead, as a forged call would send it.
fn hour_notice() -> proto::HostNotice {
    proto::HostNotice {
        cloud: "gce".into(),
        kind: "preemption".into(),
        remaining_ms: 3_600_000,
        detail: "TRUE".into(),
    }
}
