//! `tfcluster run --rdzv etcd://…`: the elastic launch with its rendezvous kept in a real etcd
//! cluster ([`etcd_cluster`]), where no agent serves anything. Across network-namespace hosts
//! (a [`Job`], an etcd member in each of hosts 0, 1 and 2 beside its agent): real
//! MultiWorkerMirroredStrategy training to completion; host 1 lost whole mid-training, its
//! etcd member (made etcd's leader first) and its agent with it, the two others going on; an
//! etcd list where nothing
//! answers. On loopback: two agents given `--rdzv-backend etcd` and a bare list, observed by
//! `resolve --from rendezvous`; two with TLS and client certificates; and flags that
//! contradict each other.
//!
//! The host jobs take [`Job`]'s turn (one at a time); every test kills its processes and
//! removes its namespaces and etcd directories when it ends, passed or not.

use std::time::{Duration, Instant};

use etcd_cluster::EtcdCluster;

use super::host_job::{Job, done, etcd_rdzv};
use super::launch::Launch;

/// A loopback job's longest wait (`sh` tasks).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The host jobs' --rdzv-timeout: how long an agent tries an etcd that does not answer.
const RDZV_TIMEOUT: &str = "5s";

/// The flags of the host jobs: one task per host, a short last call, grace and lease, and no
/// spare interpreters importing TensorFlow beside the tasks (elastic_hosts.rs's `flags`).
fn flags<'a>(nodes: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let common = [
        "--no-prewarm",
        "--nodes",
        nodes,
        "--tasks-per-node",
        "1",
        "--rdzv-last-call",
        "2s",
        "--rdzv-timeout",
        RDZV_TIMEOUT,
        "--grace",
        "5s",
    ];
    [&common[..], more].concat()
}

#[test]
fn mirrored_training_on_three_hosts_beside_a_three_member_etcd() {
    let started = Instant::now();
    let env = [
        ("EXPECT_RESTART_COUNT", "0"),
        ("EXPECT_WORKERS", "3"),
        ("STEP_SECONDS", "0"),
    ];
    let mut job = Job::training("etcd-mwms", 3, &flags("3", &[]), &env);
    job.etcd_in(&[0, 1, 2]);
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 0);
    let clusters = job.lines("cluster");
    assert_eq!(clusters.len(), 3, "{clusters:?}");
    let digest = clusters[0].1.split_whitespace().next().unwrap().to_owned();
    for (task, rest) in &clusters {
        assert!(
            rest.starts_with(&format!("{digest} workers=3 round=1 restarts=0")),
            "{task}: {rest}"
        );
    }
    let done = done(&job);
    assert_eq!(done.len(), 3, "{}", job.stdout());
    let hosts: std::collections::BTreeSet<String> = done
        .iter()
        .map(|(task, ..)| task.split('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(hosts.len(), 3, "a task on each host: {done:?}");
    job.assert_nothing_left();
    eprintln!("trained on 3 hosts with etcd in {:?}", started.elapsed());
}

#[test]
fn a_host_lost_with_its_etcd_member_leaves_two_that_finish() {
    let mut job = Job::training("etcd-lost", 3, &flags("2:3", &[]), &[]);
    job.etcd_in(&[0, 1, 2]);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    // The hardest host to lose: the one whose etcd member leads.
    lead_from(job.etcd(), 1);
    // Host 1 loses its power: its agent, its task and its etcd member die at once.
    let lost = Instant::now();
    job.hosts().kill_all(1);
    job.etcd().kill(1);
    job.expect_exits(&[0, 2], 0);
    let finished_in = lost.elapsed();
    let done = done(&job);
    assert_eq!(done.len(), 2, "{}", job.stdout());
    let lost_host = format!("{}/", job.hosts().address(1));
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!(
            *workers, 2,
            "{task}: the finishing round has the two survivors"
        );
        assert!(
            *round >= 2 && *restarts >= 1 && *restored >= 10,
            "{task}: round {round}, restarts {restarts}, restored {restored}"
        );
        assert!(
            !task.starts_with(&lost_host),
            "the lost host took no part: {task}"
        );
    }
    job.assert_nothing_left();
    let leader = job.etcd().wait_leader(Duration::from_secs(10));
    eprintln!(
        "host 1 lost with etcd's leader (m{leader} leads now): the two others finished in \
         {finished_in:?}\n{}",
        job.stderr()
    );
}

/// Makes member `member` of `etcd` its leader (`etcdctl move-leader`), and waits until it
/// leads.
fn lead_from(etcd: &EtcdCluster, member: usize) {
    let name = format!("m{member}");
    let list = etcd.etcdctl(&["member", "list", "-w", "json"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout)
        .unwrap_or_else(|e| panic!("etcdctl member list: {e}: {list:?}"));
    let id = list["members"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == name.as_str())
        .and_then(|m| m["ID"].as_u64())
        .unwrap_or_else(|| panic!("no member {name} in {list}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while etcd.leader() != Some(member) {
        assert!(Instant::now() < deadline, "{name} does not lead");
        // Sent to the leader, which hands over at once (refused while it is the target).
        let _ = etcd.etcdctl(&["move-leader", &format!("{id:x}")]);
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_etcd_that_answers_nowhere_fails_every_agent_within_the_timeout() {
    // How much longer than --rdzv-timeout an agent may take, from its start to its exit: its
    // start, the 100 ms of a last try, and a busy machine (the bound catches a timeout not
    // kept, not a slow start).
    const SLACK: Duration = Duration::from_secs(5);
    // Nothing listens on port 2379 of hosts 0 and 1 (refused at once); nothing has the third
    // address (silent).
    let mut job = Job::new("etcd-none", 3, &flags("3", &[]), &["true"], &[]);
    let rdzv = format!(
        "etcd://{}:2379,{}:2379,192.0.2.250:2379",
        job.hosts().address(0),
        job.hosts().address(1)
    );
    job.rendezvous(rdzv.clone());
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 1);
    let timeout = humantime::parse_duration(RDZV_TIMEOUT).expect("a duration");
    let mut took = Vec::new();
    for h in 0..3 {
        let agent = job.agent(h);
        let (ran_for, stderr) = (agent.ran_for(), agent.stderr());
        // How long the agent says it tried: the whole timeout, and not much more.
        let said = format!("rendezvous at {rdzv} unreachable for ");
        let at = stderr
            .find(&said)
            .unwrap_or_else(|| panic!("host {h}: {stderr}"));
        let waited = said_duration(&stderr[at + said.len()..])
            .unwrap_or_else(|| panic!("host {h}: {stderr}"));
        assert!(
            waited >= timeout && waited <= timeout + SLACK / 5,
            "host {h} says it tried for {waited:?}, not the {timeout:?} of --rdzv-timeout: \
             {stderr}"
        );
        // And so it ran, from its start to its exit.
        assert!(
            ran_for >= timeout && ran_for < timeout + SLACK,
            "host {h}'s agent ran for {ran_for:?}: --rdzv-timeout is {timeout:?}\n{stderr}"
        );
        took.push(ran_for);
    }
    job.assert_nothing_left();
    eprintln!("every agent failed, after {took:?}");
}

/// The duration at the start of `text` as the agents' messages write it (`5.0 s`, `250 ms`).
fn said_duration(text: &str) -> Option<Duration> {
    let mut words = text.split(' ');
    let value: f64 = words.next()?.parse().ok()?;
    match words.next()? {
        "s" => Some(Duration::from_secs_f64(value)),
        "ms" => Some(Duration::from_secs_f64(value / 1_000.0)),
        _ => None,
    }
}

/// Prints `seen RANK TF_CONFIG`; worker 0 then waits (30 s at most) for `$DIR/go`, so that
/// the round runs while the test looks at it.
const TASK: &str = r#"
echo "seen $TFCLUSTER_NODE_RANK $TF_CONFIG"
case "$TF_CONFIG" in
  *'"index":0'*) for _ in $(seq 300); do [ -e "$DIR/go" ] && exit 0; sleep 0.1; done; exit 9 ;;
esac
"#;

/// Two agents on loopback of a 2-host job `id`, one task each, with `flags` (the rendezvous).
fn two_agents(id: &str, dir: &str, flags: &[&str]) -> [Launch; 2] {
    let head = [
        "run",
        "--nodes",
        "2",
        "--tasks-per-node",
        "1",
        "--rdzv-last-call",
        "1s",
        "--rdzv-id",
        id,
    ];
    let args = [&head[..], flags, &["--", "sh", "-c", TASK]].concat();
    [0, 1].map(|_| Launch::start(&args, &[("DIR", dir)]))
}

/// Waits for both agents to succeed.
fn expect_success(agents: &mut [Launch; 2]) {
    for agent in agents.iter_mut() {
        let status = agent.wait(TIMEOUT);
        assert_eq!(status.code(), Some(0), "{}", agent.stderr());
    }
}

#[test]
fn two_agents_on_loopback_meet_in_etcd_given_a_bare_list() {
    let etcd = EtcdCluster::start_local(3);
    let rdzv = etcd_rdzv(&etcd);
    let list = rdzv.strip_prefix("etcd://").expect("an etcd:// value");
    let scratch = super::scratch("etcd-bare");
    let dir = scratch.path().to_str().unwrap();
    let mut agents = two_agents("bare", dir, &["--rdzv-backend", "etcd", "--rdzv", list]);
    for agent in &agents {
        agent.lines_with("] seen ", 1, TIMEOUT);
    }
    // An observer of the running round, through etcd too.
    let out = super::tfcluster(&[
        "resolve",
        "--from",
        "rendezvous",
        "--rdzv",
        &rdzv,
        "--rdzv-id",
        "bare",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let seen = agents[0].lines_with("] seen ", 1, TIMEOUT).remove(0);
    let tf_config: serde_json::Value =
        serde_json::from_str(seen.splitn(4, ' ').nth(3).expect("TF_CONFIG")).expect("JSON");
    assert_eq!(found["cluster"], tf_config["cluster"], "{found}");
    assert_eq!(found["source"], format!("rendezvous {rdzv} job \"bare\""));
    std::fs::write(format!("{dir}/go"), "").unwrap();
    expect_success(&mut agents);
}

#[test]
fn two_agents_on_loopback_meet_in_etcd_over_tls_with_client_certificates() {
    let (etcd, tls) = EtcdCluster::start_local_tls(1);
    let rdzv = etcd_rdzv(&etcd);
    let scratch = super::scratch("etcd-tls");
    let dir = scratch.path().to_str().unwrap();
    std::fs::write(format!("{dir}/go"), "").unwrap();
    let tls_flags = super::rdzv_tls_flags(&tls.ca, &tls.client_cert, &tls.client_key);
    let flags: Vec<&str> = ["--rdzv", &rdzv]
        .into_iter()
        .chain(tls_flags.iter().map(String::as_str))
        .collect();
    let mut agents = two_agents("tls", dir, &flags);
    expect_success(&mut agents);
    // Without a client certificate etcd refuses the agent, which fails within its timeout
    // naming the endpoints.
    let started = Instant::now();
    let mut agent = Launch::start(
        &[
            "run",
            "--rdzv",
            &rdzv,
            "--rdzv-tls-ca",
            &tls.ca.display().to_string(),
            "--rdzv-timeout",
            "2s",
            "--",
            "true",
        ],
        &[],
    );
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let stderr = agent.stderr();
    // The endpoints, and what TLS said: the members' alert, or (TLS 1.3 finishes the
    // client's handshake before the server checks its certificate) the connection closed,
    // or the request written into it after the close.
    assert!(
        stderr.contains(&rdzv)
            && ["BadCertificate", "connection closed", "broken pipe"]
                .iter()
                .any(|why| stderr.contains(why)),
        "{stderr}"
    );
}

#[test]
fn rdzv_flags_that_contradict_each_other_are_usage_errors_naming_both() {
    for (args, code, says) in [
        (
            &[
                "run",
                "--rdzv-backend",
                "built-in",
                "--rdzv",
                "etcd://127.0.0.1:1",
            ][..],
            2,
            &["--rdzv-backend built-in", "etcd://127.0.0.1:1"][..],
        ),
        (
            &["run", "--rdzv", "127.0.0.1:1", "--rdzv-tls-ca", "/ca.pem"],
            2,
            &["--rdzv-tls-ca", "127.0.0.1:1"],
        ),
        (
            &["run", "--rdzv", "127.0.0.1:1,127.0.0.1:2"],
            2,
            &["127.0.0.1:1,127.0.0.1:2", "etcd"],
        ),
        (&["run", "--rdzv", "etcd://h:0"], 2, &["--rdzv", "\"h:0\""]),
        (
            &[
                "run",
                "--rdzv",
                "etcd://127.0.0.1:1",
                "--rdzv-tls-ca",
                "/no/such/ca.pem",
            ],
            1,
            &["cannot read --rdzv-tls-ca /no/such/ca.pem"],
        ),
        (
            &[
                "resolve",
                "--from",
                "rendezvous",
                "--rdzv-backend",
                "built-in",
                "--rdzv",
                "etcd://a",
            ],
            2,
            &["--rdzv-backend built-in", "etcd://a:2379"],
        ),
    ] {
        let mut line = args.to_vec();
        if line[0] == "run" {
            line.extend(["--", "true"]);
        }
        let out = super::tfcluster(&line);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{line:?}: {stderr}");
        for word in says {
            assert!(stderr.contains(word), "{line:?}: {stderr}");
        }
    }
}
