//! `run --rdzv --preemption-notices`: a cloud's notice for one host (each cloud's metadata
//! service standing in on loopback) makes that host's agent stop its tasks with SIGTERM
//! (each shows the notice it read from `TFCLUSTER_NOTICE_FILE`, then exits 42 as
//! TensorFlow's handler does after saving) and leave before the deadline, telling Azure it
//! may go ahead; the job forms its next round without it, no restart counted, and ends when
//! its work does. The rendezvous (built in, and in etcd) keeps the host out until the
//! deadline: another agent there waits. A standing notice (a rebalance, a spot interruption
//! far ahead) shows in `tfcluster status` and, withdrawn, changes nothing.

use std::ops::Deref;
use std::time::{Duration, Instant, SystemTime};

use http_standin::azure_events::event;
use http_standin::{AzureScheduledEvents, Ec2Imds, GceMetadata, StandIn};
use tokio::runtime::Runtime;

use super::elastic_run::{scratch, serving};
use super::host_job::etcd_rdzv;
use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The job's rendezvous id, for `tfcluster status`.
const RDZV_ID: &str = "preempted";

/// The noticed host's address: another loopback address than the first host's, so that
/// the rendezvous tells the two hosts apart.
const NOTICED_HOST: &str = "127.0.0.2";

/// `tfcluster status` of the job at `endpoint`, as JSON.
fn status_json(endpoint: &str) -> serde_json::Value {
    status_of(endpoint, RDZV_ID).unwrap_or_else(|e| panic!("{e}"))
}

/// `tfcluster status` of job `rdzv_id` at `endpoint`, as JSON, or what it said when it
/// failed (the job not there yet).
fn status_of(endpoint: &str, rdzv_id: &str) -> Result<serde_json::Value, String> {
    let args = ["status", "--rdzv", endpoint, "--rdzv-id", rdzv_id];
    let mut status = Launch::start(&[&args[..], &["--format", "json"]].concat(), &[]);
    if status.wait(TIMEOUT).code() != Some(0) {
        return Err(status.stderr());
    }
    Ok(serde_json::from_str(&status.stdout()).expect("status prints one JSON object"))
}

/// The node on `host` in `status`, if it has one.
fn node_on<'a>(status: &'a serde_json::Value, host: &str) -> Option<&'a serde_json::Value> {
    status["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["host"] == host)
}

/// The flags of an agent of the job at `endpoint` following `notices`, then `extra`.
fn agent_args(endpoint: &str, notices: &str, extra: &[&str]) -> Vec<String> {
    let flags = [
        "run",
        "--rdzv",
        endpoint,
        "--rdzv-id",
        RDZV_ID,
        "--nodes",
        "1:2",
        "--rdzv-last-call",
        "1s",
        "--rdzv-timeout",
        "10s",
        "--grace",
        "5s",
        "--preemption-notices",
        notices,
    ];
    let task = ["--", "sh", "-c", TASK];
    [&flags[..], extra, &task[..]]
        .concat()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Prints `seen RANK ROUND RESTARTS WORKERS`; on SIGTERM prints the notice it can read and
/// exits 42 (a save, then TensorFlow's planned exit); exits 0 once `$DIR/done` exists.
const TASK: &str = r#"
workers=$(echo "$TF_CONFIG" | grep -o '127\.0\.0\.[0-9]*:[0-9]*' | wc -l)
echo "seen $TFCLUSTER_NODE_RANK $TFCLUSTER_ROUND $TFCLUSTER_RESTART_COUNT $workers"
trap 'echo "saved round=$TFCLUSTER_ROUND notice=$(cat "$TFCLUSTER_NOTICE_FILE" 2>/dev/null)"; exit 42' TERM
while [ ! -e "$DIR/done" ]; do sleep 0.1; done
"#;

/// `(rank, round, restarts, workers)` of an agent's `seen` lines.
fn seen(agent: &Launch) -> Vec<(u32, u64, u32, usize)> {
    agent
        .stdout()
        .lines()
        .filter_map(|line| {
            let rest = line.split_once("] seen ")?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((
                f[0].parse().ok()?,
                f[1].parse().ok()?,
                f[2].parse().ok()?,
                f[3].parse().ok()?,
            ))
        })
        .collect()
}

/// Polls `what` until it gives something, for at most [`TIMEOUT`].
fn until<T>(agents: &[&Launch], what: &str, found: impl FnMut() -> Option<T>) -> T {
    until_within(TIMEOUT, agents, what, found)
}

/// How long a TensorFlow job's step may take: its tasks import TensorFlow first, several
/// at once on a busy 2-core machine.
const TF_TIMEOUT: Duration = Duration::from_secs(180);

/// Polls `what` until it gives something, for at most `timeout`.
fn until_within<T>(
    timeout: Duration,
    agents: &[&Launch],
    what: &str,
    mut found: impl FnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = found() {
            return found;
        }
        if started.elapsed() > timeout {
            let output: Vec<String> = agents
                .iter()
                .map(|a| format!("{}{}", a.stdout(), a.stderr()))
                .collect();
            panic!("no {what} within {timeout:?}:\n{}", output.join("\n----\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One cloud's stand-in: where the agent finds it, and how the test gives notice.
trait Cloud {
    /// `--preemption-notices`'s word.
    const NAME: &'static str;
    /// The endpoint variable and its value.
    fn endpoint(&self) -> (&'static str, String);
    /// Gives notice that the host goes within about a minute.
    fn give_notice(&self);
}

impl Cloud for GceMetadata {
    const NAME: &'static str = "gce";
    fn endpoint(&self) -> (&'static str, String) {
        ("GCE_METADATA_HOST", self.host().to_owned())
    }
    fn give_notice(&self) {
        self.set("instance/preempted", "TRUE");
    }
}

impl Cloud for Ec2Imds {
    const NAME: &'static str = "aws";
    fn endpoint(&self) -> (&'static str, String) {
        (
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
            self.endpoint().to_owned(),
        )
    }
    fn give_notice(&self) {
        // A minute and a little: acted on --preemption-lead (60 s) before, in a few seconds.
        let time = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(63));
        self.set_spot_instance_action(Some(
            serde_json::json!({"action": "terminate", "time": time.to_string()}),
        ));
    }
}

impl Cloud for AzureScheduledEvents {
    const NAME: &'static str = "azure";
    fn endpoint(&self) -> (&'static str, String) {
        (
            "TFCLUSTER_AZURE_METADATA_ENDPOINT",
            self.endpoint().to_owned(),
        )
    }
    fn give_notice(&self) {
        let mut preempt = event("E-spot", "Preempt", &["vm-0"]);
        let at = httpdate(SystemTime::now() + Duration::from_secs(45));
        preempt["NotBefore"] = at.into();
        self.schedule(preempt);
    }
}

/// `Mon, 19 Sep 2016 18:29:47 GMT` of `time`, as Azure writes `NotBefore`.
fn httpdate(time: SystemTime) -> String {
    let rfc = humantime::format_rfc3339_seconds(time).to_string();
    let (date, clock) = rfc.trim_end_matches('Z').split_once('T').expect("RFC 3339");
    let [year, month, day] = [0, 1, 2].map(|i| date.split('-').nth(i).expect("a date"));
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS[month.parse::<usize>().expect("a month") - 1];
    // The weekday is not read: any will do.
    format!("Mon, {day} {month} {year} {clock} GMT")
}

/// Two agents of a `--nodes 1:2` job, the second following `cloud`'s notices; the notice
/// given once both are in a round: the second leaves (exit 0, saying so, its task told and
/// shown the notice), the first trains on alone with no restart counted, then the job ends.
fn departure<C: Cloud + Deref<Target = StandIn>>(cloud: &C, etcd: Option<&str>) {
    let dir = scratch(&format!("preemption-{}", C::NAME));
    let dir_text = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let (mut a, endpoint) = match etcd {
        None => serving(|endpoint, log| {
            let args = agent_args(endpoint, "off", &[]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Launch::start(&args, &[("DIR", &dir_text), log])
        }),
        Some(etcd) => {
            let args = agent_args(etcd, "off", &[]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            (Launch::start(&args, &[("DIR", &dir_text)]), etcd.to_owned())
        }
    };
    let args = agent_args(&endpoint, C::NAME, &["--host", NOTICED_HOST]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (variable, value) = cloud.endpoint();
    let mut b = Launch::start(&args, &[("DIR", &dir_text), (variable, &value)]);
    // Both hosts in one round: the last round B's task saw, which A's saw too.
    let round = until(&[&a, &b], "round of both hosts", || {
        let (_, round, _, workers) = *seen(&b).last()?;
        let both = workers == 2 && seen(&a).iter().any(|s| s.1 == round);
        both.then_some(round)
    });

    let noticed = Instant::now();
    cloud.give_notice();
    let status = b.wait(TIMEOUT);
    let b_err = b.stderr();
    assert_eq!(status.code(), Some(0), "a planned departure: {b_err}");
    let said = format!(
        "left the job ahead of the cloud's notice: {} preemption (",
        C::NAME
    );
    assert!(b_err.contains(&said), "{b_err}");
    let b_out = b.stdout();
    let saved = b_out
        .lines()
        .find_map(|l| l.split_once("] saved ").map(|(_, rest)| rest.to_owned()))
        .unwrap_or_else(|| panic!("B's task was told (SIGTERM): {b_out}"));
    // In the round both hosts were in, or a later one (a busy machine may have ended that
    // round by a late heartbeat before the notice came).
    let saved_round: Option<u64> = saved
        .strip_prefix("round=")
        .and_then(|rest| rest.split_once(" notice={"))
        .and_then(|(n, _)| n.parse().ok());
    assert!(saved_round.is_some_and(|r| r >= round), "{saved}");
    let cloud_field = format!(r#""cloud":"{}""#, C::NAME);
    assert!(
        saved.contains(&cloud_field) && saved.contains(r#""kind":"preemption""#),
        "{saved}"
    );

    // A trains on alone, in a new round, with no restart counted.
    let (rank, next, restarts, workers) = until(&[&a], "round without the noticed host", || {
        seen(&a).into_iter().find(|s| s.1 > round)
    });
    let without = noticed.elapsed();
    assert_eq!(
        (rank, restarts, workers),
        (0, 0, 1),
        "round {next}: {}",
        a.stdout()
    );
    eprintln!(
        "{}: from the notice to a round without its host: {without:?}",
        C::NAME
    );

    // The rendezvous keeps the noticed host out until the deadline: another agent there
    // (one that reads no notice) joins and waits, and the round runs on.
    let status = status_json(&endpoint);
    let aside = &status["hosts_aside"][0];
    assert_eq!(aside["host"], NOTICED_HOST, "{status}");
    let reason = aside["reason"].as_str().unwrap_or_default();
    let noticed = format!("its node left ahead of a {} preemption notice", C::NAME);
    assert!(reason.contains(&noticed), "{status}");
    let args = agent_args(&endpoint, "off", &["--host", NOTICED_HOST]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut c = Launch::start(&args, &[("DIR", &dir_text)]);
    let waiting = until(&[&a, &c], "the returning host waiting", || {
        let status = status_json(&endpoint);
        let node = node_on(&status, NOTICED_HOST)?;
        let waiting = node["state"] == "waiting";
        waiting.then_some(status)
    });
    assert_eq!(waiting["state"], "running", "{waiting}");
    assert_eq!(waiting["round"], next, "the round ran on: {waiting}");

    std::fs::write(dir.path().join("done"), "").expect("written");
    let status = a.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", a.stderr());
    // The job is done: the waiting agent learns so and ends with it.
    assert_eq!(c.wait(TIMEOUT).code(), Some(0), "{}", c.stderr());
    assert!(seen(&c).is_empty(), "never in a round: {}", c.stdout());
    assert!(!cloud.requests().is_empty());
}

#[test]
fn a_gce_spot_notice_makes_its_host_leave_and_the_job_go_on_without_it() {
    let rt = Runtime::new().expect("a runtime");
    let metadata = rt.block_on(GceMetadata::start());
    departure(&metadata, None);
    let requests = metadata.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.header("metadata-flavor") == Some("Google"))
    );
    rt.block_on(metadata.stop());
}

#[test]
fn an_ec2_spot_interruption_makes_its_host_leave_and_the_job_go_on_without_it() {
    let rt = Runtime::new().expect("a runtime");
    let imds = rt.block_on(Ec2Imds::start());
    departure(&imds, None);
    assert!(imds.tokens_issued() >= 1);
    rt.block_on(imds.stop());
}

#[test]
fn a_departure_is_the_same_with_the_rendezvous_in_etcd() {
    let rt = Runtime::new().expect("a runtime");
    let imds = rt.block_on(Ec2Imds::start());
    let etcd = etcd_cluster::EtcdCluster::start_local(1);
    departure(&imds, Some(&etcd_rdzv(&etcd)));
    rt.block_on(imds.stop());
}

#[test]
fn an_azure_preemption_makes_its_host_leave_and_is_approved_once_it_left() {
    let rt = Runtime::new().expect("a runtime");
    let events = rt.block_on(AzureScheduledEvents::start());
    departure(&events, None);
    // Approved after the agent left, so Azure may go ahead before NotBefore.
    assert_eq!(events.acknowledged(), ["E-spot"]);
    rt.block_on(events.stop());
}

/// Two agents of a `--nodes 1:2` job, the second following EC2's notices with the default
/// lead: a rebalance recommendation and a spot interruption ten minutes ahead each show in
/// `tfcluster status` while they stand and go when withdrawn (a flapping notice), and the
/// job runs on in its round all the while.
#[test]
fn a_standing_notice_shows_in_status_and_a_withdrawn_one_changes_nothing() {
    let rt = Runtime::new().expect("a runtime");
    let imds = rt.block_on(Ec2Imds::start());
    let dir = scratch("preemption-standing");
    let dir_text = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let (mut a, endpoint) = serving(|endpoint, log| {
        let args = agent_args(endpoint, "off", &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Launch::start(&args, &[("DIR", &dir_text), log])
    });
    let args = agent_args(&endpoint, "aws", &["--host", NOTICED_HOST]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (variable, value) = Cloud::endpoint(&imds);
    let mut b = Launch::start(&args, &[("DIR", &dir_text), (variable, &value)]);
    let round = until(&[&a, &b], "round of both hosts", || {
        let (_, round, _, workers) = *seen(&b).last()?;
        (workers == 2 && seen(&a).iter().any(|s| s.1 == round)).then_some(round)
    });
    // The notice as the status shows B's, once it does (`None`: until it has none).
    let shown = |want: bool| {
        until(&[&a, &b], "the status showing the notice", || {
            let status = status_json(&endpoint);
            let notice = node_on(&status, NOTICED_HOST)?["notice"].clone();
            (notice.is_null() != want).then_some((notice, status))
        })
    };

    imds.set_rebalance(Some(
        serde_json::json!({"noticeTime": "2026-12-07T12:00:00Z"}),
    ));
    let (notice, _) = shown(true);
    assert_eq!(
        (&notice["cloud"], &notice["kind"]),
        (&"aws".into(), &"rebalance".into())
    );
    assert!(notice["deadline_in_s"].is_null(), "{notice}");
    imds.set_rebalance(None);
    shown(false);

    let time = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(600));
    imds.set_spot_instance_action(Some(
        serde_json::json!({"action": "terminate", "time": time.to_string()}),
    ));
    let (notice, status) = shown(true);
    assert_eq!(notice["kind"], "preemption", "{notice}");
    let left = notice["deadline_in_s"].as_f64().unwrap_or_default();
    assert!((500.0..=600.0).contains(&left), "{notice}");
    let mut text = Launch::start(&["status", "--rdzv", &endpoint, "--rdzv-id", RDZV_ID], &[]);
    assert_eq!(text.wait(TIMEOUT).code(), Some(0), "{}", text.stderr());
    let line = format!("  host {NOTICED_HOST} (");
    let said = text.stdout();
    let said = said
        .lines()
        .find(|l| l.starts_with(&line))
        .unwrap_or_default()
        .to_owned();
    assert!(
        said.contains("): aws preemption notice (terminate), deadline in ")
            && said.ends_with("; leaving before the deadline"),
        "{}",
        text.stdout()
    );
    assert_eq!(
        status["round"], round,
        "a notice alone ends nothing: {status}"
    );
    imds.set_spot_instance_action(None);
    let (_, status) = shown(false);
    assert_eq!(status["round"], round, "nor does its withdrawal: {status}");

    std::fs::write(dir.path().join("done"), "").expect("written");
    for agent in [&mut a, &mut b] {
        let status = agent.wait(TIMEOUT);
        assert_eq!(status.code(), Some(0), "{}", agent.stderr());
    }
    assert!(seen(&b).iter().all(|s| s.1 == round), "{}", b.stdout());
    rt.block_on(imds.stop());
}

/// The guide's ParameterServerStrategy loop, as its page shows it.
fn guide_loop() -> String {
    let page: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "docs/guide/launching.md"]
        .iter()
        .collect();
    let page = std::fs::read_to_string(&page).expect("the guide's page");
    let (_, after) = page
        .split_once("<!-- pss-coordinator-loop:")
        .expect("the page marks the loop");
    let block = after.split_once("```python\n").expect("a Python block").1;
    block
        .split_once("```")
        .expect("the block ends")
        .0
        .to_owned()
}

/// The arguments of a ParameterServerStrategy job's agent on `host` (`shape`: its nodes,
/// tasks and layout) at `rdzv`, following `notices`, its tasks running `command`.
fn pss_agent(
    rdzv: &str,
    host: &str,
    notices: &str,
    shape: &[&str],
    command: [&str; 2],
) -> Vec<String> {
    let head = ["run", "--rdzv", rdzv, "--rdzv-id", "pss", "--no-prewarm"];
    let timing = [
        "--rdzv-last-call",
        "1s",
        "--rdzv-timeout",
        "10s",
        "--grace",
        "30s",
    ];
    let place = ["--host", host, "--preemption-notices", notices, "--"];
    [&head[..], shape, &timing, &place, &command]
        .concat()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The first `WORD N` line of `text`'s task output, as N.
fn step_said(text: &str, word: &str) -> Option<u64> {
    let word = format!("] {word} ");
    text.lines()
        .find_map(|l| l.split_once(word.as_str())?.1.trim().parse().ok())
}

/// A ParameterServerStrategy job (chief, parameter server and worker on one host, its
/// rendezvous in etcd) runs the guide's coordinator loop; a GCE spot notice for the host: the
/// agent stops the chief first, which saves at the step it reached while the parameter
/// server still serves and exits 42; the agent leaves. A new host's round restores that step
/// and finishes the job.
#[test]
fn a_parameter_server_strategy_chief_saves_on_its_host_s_notice_and_the_next_round_restores_it() {
    let [python, script] = super::tf_script("pss_preemption.py");
    let source = std::fs::read_to_string(&script).expect("the script");
    assert!(
        source.ends_with(&guide_loop()),
        "the guide's loop is the script's end, word for word"
    );
    let rt = Runtime::new().expect("a runtime");
    let metadata = rt.block_on(GceMetadata::start());
    let etcd = etcd_cluster::EtcdCluster::start_local(1);
    let rdzv = etcd_rdzv(&etcd);
    let dir = scratch("preemption-pss");
    let ckpt = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let agent = |host: &str, notices: &str| {
        let shape = [
            "--nodes",
            "1",
            "--tasks-per-node",
            "3",
            "--layout",
            "chief=1,ps=1",
        ];
        pss_agent(&rdzv, host, notices, &shape, [&python, &script])
    };
    let args = agent(NOTICED_HOST, "gce");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (variable, value) = Cloud::endpoint(&metadata);
    let env = [
        ("CKPT_DIR", ckpt.as_str()),
        ("STEPS", "1000000"),
        (variable, &value),
    ];
    let mut first = Launch::start(&args, &env);
    until_within(TF_TIMEOUT, &[&first], "the chief training", || {
        step_said(&first.stdout(), "step")
    });

    metadata.give_notice();
    let status = first.wait(TF_TIMEOUT);
    let (out, err) = (first.stdout(), first.stderr());
    assert_eq!(status.code(), Some(0), "a planned departure: {out}{err}");
    assert!(
        err.contains("left the job ahead of the cloud's notice: gce preemption"),
        "{err}"
    );
    let saved =
        step_said(&out, "saved step").unwrap_or_else(|| panic!("the chief saved: {out}{err}"));
    assert!(saved > 0 && saved.is_multiple_of(10), "{out}");

    let goal = (saved + 20).to_string();
    let args = agent("127.0.0.1", "off");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut next = Launch::start(&args, &[("CKPT_DIR", &ckpt), ("STEPS", &goal)]);
    let status = next.wait(TF_TIMEOUT);
    let (out, err) = (next.stdout(), next.stderr());
    assert_eq!(status.code(), Some(0), "the job finishes: {out}{err}");
    assert_eq!(step_said(&out, "restored step"), Some(saved), "{out}");
    assert!(out.contains(&format!("] step {}\n", saved + 20)), "{out}");
    rt.block_on(metadata.stop());
}

/// A ParameterServerStrategy job on three hosts (two tasks each: the chief and ps:0, ps:1
/// and a worker, two workers), its coordinator the guide's loop; a GCE spot notice for the
/// second host, which runs ps:1 and not the chief: the rendezvous tells the chief's agent,
/// which stops the chief alone so it saves while ps:1 still serves; its planned exit ends the
/// round, the noticed host leaves then, and the next round, without it, restores that step.
#[test]
fn a_parameter_server_s_notice_reaches_the_chief_on_another_host_which_saves_first() {
    let [python, script] = super::tf_script("pss_preemption.py");
    let rt = Runtime::new().expect("a runtime");
    let metadata = rt.block_on(GceMetadata::start());
    let dir = scratch("preemption-pss-server");
    let ckpt = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let agent = |rdzv: &str, host: &str, notices: &str| {
        let shape = [
            "--nodes",
            "2:3",
            "--tasks-per-node",
            "2",
            "--layout",
            "chief=1,ps=2",
        ];
        pss_agent(rdzv, host, notices, &shape, [&python, &script])
    };
    let env = [("CKPT_DIR", ckpt.as_str()), ("STEPS", "1000000")];
    let (mut chief, endpoint) = serving(|endpoint, log| {
        let args = agent(endpoint, "127.0.0.1", "off");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Launch::start(&args, &[&env[..], &[log]].concat())
    });
    let joined = |n: usize| {
        until(&[&chief], "the hosts joined", || {
            let status = status_of(&endpoint, "pss").ok()?;
            (status["nodes"].as_array()?.len() >= n).then_some(())
        })
    };
    joined(1);
    let args = agent(&endpoint, NOTICED_HOST, "gce");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (variable, value) = Cloud::endpoint(&metadata);
    let mut server = Launch::start(&args, &[&env[..], &[(variable, value.as_str())]].concat());
    joined(2);
    let args = agent(&endpoint, "127.0.0.3", "off");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut worker = Launch::start(&args, &env);
    let all = [&chief, &server, &worker];
    // Training in a round of the three hosts, ps:1 on the noticed one.
    until_within(TF_TIMEOUT, &all, "a round of three hosts training", || {
        let status = status_of(&endpoint, "pss").ok()?;
        let ps1 = format!("{NOTICED_HOST}:");
        let three = status["members"].as_array()?.len() == 3
            && status["cluster"]["ps"][1].as_str()?.starts_with(&ps1);
        let round = status["round"].as_u64()?;
        let trained = chief
            .stdout()
            .lines()
            .any(|l| l.contains("/chief:0] step "));
        (three && trained).then_some(round)
    });

    metadata.give_notice();
    let status = server.wait(TF_TIMEOUT);
    let (out, err) = (server.stdout(), server.stderr());
    assert_eq!(status.code(), Some(0), "a planned departure: {out}{err}");
    assert!(
        err.contains("left the job ahead of the cloud's notice: gce preemption"),
        "{err}"
    );
    let chief_out = chief.stdout();
    let saved = step_said(&chief_out, "saved step")
        .unwrap_or_else(|| panic!("the chief saved: {chief_out}{}", chief.stderr()));
    let restored = until_within(
        TF_TIMEOUT,
        &[&chief, &worker],
        "the next round restoring",
        || step_said(&chief.stdout(), "restored step"),
    );
    assert_eq!(restored, saved, "{}", chief.stdout());
    let status = status_of(&endpoint, "pss").expect("the job's status");
    assert_eq!(status["restart_count"], 0, "{status}");
    assert_eq!(
        status["members"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );

    // Stopped as a ParameterServerStrategy job is: the chief's host first (its chief saves
    // while the other host's parameter server serves), then the other.
    for agent in [&mut chief, &mut worker] {
        agent.signal(nix::sys::signal::Signal::SIGTERM);
        agent.wait(TIMEOUT);
    }
    rt.block_on(metadata.stop());
}
