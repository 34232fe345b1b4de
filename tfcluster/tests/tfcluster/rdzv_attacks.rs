//! Attacks on a `tfcluster rendezvous serve` process, each beside a legitimate job: two agents
//! (`run --rdzv`, a job token) that must form their round and finish while the attack is on.
//! Forged node calls (Report, Leave, Heartbeat, Join under a member's node id, without its
//! secret) and calls without the job's token; thousands of WatchRounds streams that never
//! read a large round; idle connections under a hard 1,024-descriptor limit; a flood of new
//! jobs and of new nodes from one address. Each holds the rendezvous to the targets of the
//! TaskServer's attacks ([`super`]) with a lower peak: 128 MB of resident memory at most
//! during the attack, and a floor on what the attack did (calls made, streams opened,
//! connections held), so an attack cut short passes nothing.

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use elastic::proto::rendezvous_client::RendezvousClient as Stub;
use elastic::proto::{self, task_status, wait_round_response};
use elastic::{ClientOptions, JobConfig, Join, RendezvousClient, Waited};
use hyper_util::rt::TokioIo;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use raw_http2::{RawConnection, call, frame, grpc_message, grpc_request_headers};
use tempfile::TempDir;
use tonic::codegen::{Service, http};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request};

use super::super::launch::Launch;
use super::process_meter::{MB, open_files_soft_limit};
use super::{
    Attacked, Report, check_aftermath, check_peak, grpc_calls::runtime, idle_connections, lines_of,
    mb, take_turn, tfcluster_under, watch,
};

/// The most resident memory the rendezvous may hold during an attack.
const PEAK_TARGET: u64 = 128 * MB;

/// The legitimate job's id and token.
const LEGIT: &str = "legit";
const TOKEN: &str = "a-legitimate-job-token-of-some-length";

/// A `tfcluster rendezvous serve` process on a free loopback port; its stderr goes to a file
/// in a scratch directory with the legitimate job's token file. Killed and reaped on drop.
struct Rendezvous {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    token_file: PathBuf,
    /// See [`Attacked::after_target`].
    after_target: u64,
    _dir: TempDir,
}

impl Rendezvous {
    /// Serves on `127.0.0.1:0` (or `0.0.0.0:0`, with `all`) with `more` arguments, under
    /// `nofile` if given.
    fn serve(attack: &str, nofile: Option<&str>, listen: &str, more: &[&str]) -> Self {
        let dir = super::super::scratch(&format!("rdzv-attack-{attack}"));
        let log = dir.path().join("serve.log");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, TOKEN).expect("the token file");
        let mut child = tfcluster_under(nofile)
            .args(["rendezvous", "serve", "--listen", listen])
            .args(more)
            .env_remove("RUST_LOG")
            // glibc makes a new malloc arena whenever a thread finds the others locked,
            // more of them the busier the machine, and each keeps what it freed: the stalled
            // readers' attack peaked at 103 MB on a quiet machine and 129 MB beside the test
            // command's builds (two arenas: 118 MB). With one arena (80-95 MB over four
            // waves, busy or not) the figure is what the server holds, which its bounds
            // limit, not the allocator's caching.
            .env("MALLOC_ARENA_MAX", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("a log file"))
            .spawn()
            .expect("the binary runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("its first line");
        let served = line
            .trim()
            .strip_prefix("serving the rendezvous on ")
            .unwrap_or_else(|| panic!("not serving: {line:?}: {}", lines_of(&log).join("\n")));
        let port = served.parse::<SocketAddr>().expect("an address").port();
        Self {
            child,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            log,
            token_file,
            after_target: super::AFTER_TARGET,
            _dir: dir,
        }
    }

    fn endpoint(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Attacked for Rendezvous {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn log_lines(&self) -> Vec<String> {
        lines_of(&self.log)
    }

    fn peak_target(&self) -> u64 {
        PEAK_TARGET
    }

    fn after_target(&self) -> u64 {
        self.after_target
    }

    fn legit_during(&self, report: &mut Report) {
        // A job id is not reused after its job ended: each legitimate job has its own.
        static JOBS: AtomicU32 = AtomicU32::new(0);
        let id = format!("during-{}", JOBS.fetch_add(1, Ordering::Relaxed));
        let mut job = LegitJob::start(self, &id, 1);
        job.finish(report, "legit job during the attack");
    }
}

/// The legitimate job: two agents with the job's token, each running one task that sleeps.
struct LegitJob {
    agents: [Launch; 2],
    task_secs: u64,
}

impl LegitJob {
    fn start(target: &Rendezvous, id: &str, task_secs: u64) -> Self {
        Self::start_with(target, id, task_secs, "2")
    }

    /// Two agents of a job of `nodes` hosts (`2:3`: a round of the two has room).
    fn start_with(target: &Rendezvous, id: &str, task_secs: u64, nodes: &str) -> Self {
        let endpoint = target.endpoint();
        let token = target.token_file.display().to_string();
        let rdzv_id = format!("{LEGIT}-{id}");
        let sleep = format!("sleep {task_secs}");
        let args = [
            "run",
            "--rdzv",
            &endpoint,
            "--rdzv-id",
            &rdzv_id,
            "--rdzv-token-file",
            &token,
            "--nodes",
            nodes,
            "--rdzv-last-call",
            "300ms",
            "--rdzv-timeout",
            "10s",
            "--",
            "sh",
            "-c",
            &sleep,
        ];
        Self {
            agents: [Launch::start(&args, &[]), Launch::start(&args, &[])],
            task_secs,
        }
    }

    /// Both agents must exit 0, their tasks having run their whole time.
    fn finish(&mut self, report: &mut Report, what: &str) {
        let codes = self
            .agents
            .each_mut()
            .map(|a| a.wait(Duration::from_secs(60)).code());
        let ran = self.agents[0].ran_for().min(self.agents[1].ran_for());
        let ok = codes == [Some(0), Some(0)] && ran >= Duration::from_secs(self.task_secs);
        report.figure(
            what,
            format!(
                "{} (exits {codes:?}, {ran:.1?})",
                if ok { "succeeded" } else { "FAILED" }
            ),
        );
        let agents = &self.agents;
        report.require(ok, || {
            format!(
                "{what}: exits {codes:?} after {ran:.1?} (tasks of {} s):\n{}\n{}",
                self.task_secs,
                agents[0].stderr(),
                agents[1].stderr()
            )
        });
    }
}

/// `message` as a request carrying `token` and `secret` as an agent's calls do.
fn request<T>(message: T, token: Option<&str>, secret: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(Duration::from_secs(5));
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().expect("ASCII");
        request.metadata_mut().insert("authorization", value);
    }
    if let Some(secret) = secret {
        let value = secret.parse().expect("ASCII");
        request
            .metadata_mut()
            .insert("tfcluster-node-secret", value);
    }
    request
}

async fn stub(addr: SocketAddr) -> Stub<Channel> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("connects");
    Stub::new(channel)
}

/// The running round of the legitimate job `rdzv_id`, observed with its token.
async fn running_round(stub: &mut Stub<Channel>, rdzv_id: &str) -> proto::Round {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let watch = proto::WatchRoundsRequest {
            rdzv_id: rdzv_id.into(),
            poll_ms: 2_000,
            ..Default::default()
        };
        if let Ok(answer) = stub.watch_rounds(request(watch, Some(TOKEN), None)).await
            && let Some(wait_round_response::Outcome::Round(round)) = answer.into_inner().outcome
        {
            return round;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the legitimate job formed no round within 30 s")
}

/// Forged calls of one kind: how many were made, and every outcome but the expected refusal.
#[derive(Default)]
struct Forged {
    made: u64,
    wrong: Vec<String>,
}

impl Forged {
    fn record<T: std::fmt::Debug>(&mut self, result: Result<T, tonic::Status>, expected: Code) {
        self.made += 1;
        match result {
            Err(status) if status.code() == expected => {}
            other => {
                if self.wrong.len() < 3 {
                    self.wrong.push(format!("{other:?}"));
                }
            }
        }
    }
}

/// A well-formed node secret that is no node's.
const WRONG_SECRET: &str = "0123456789abcdef0123456789abcdef";
/// A well-formed token that is not the job's.
const WRONG_TOKEN: &str = "another-token-of-enough-length";

/// Forged node calls, knowing every member's node id (as if WatchRounds had leaked them) but
/// not their secrets, and calls without the job's token (an operator's JobStatus and ListJobs
/// included): every one is refused or shows nothing, and the job runs its tasks' whole time
/// and succeeds.
#[test]
fn attack_forged_node_calls_and_calls_without_the_token() {
    // At least this long and this many rounds of every kind: 180 rounds in 3 s on an idle
    // machine, 21 while CI's host jobs ran beside it. A count as well as a time, so a slow
    // machine makes the attack longer rather than failing it, and a fast one makes more.
    const FORGE_FOR: Duration = Duration::from_secs(3);
    const MIN_EACH: u64 = 10;
    let _turn = take_turn();
    let mut report = Report::new("forged node calls");
    let target = Rendezvous::serve("forged", None, "127.0.0.1:0", &[]);
    let watch = watch(&report, &target);
    let mut job = LegitJob::start(&target, "forged", 6);

    let kinds = runtime().block_on(async {
        let mut stub = stub(target.addr).await;
        let rdzv_id = format!("{LEGIT}-forged");
        let round = running_round(&mut stub, &rdzv_id).await;
        let members = round.members.clone();
        let [first, second] = [&members[0], &members[1]];
        let mut kinds: Vec<(&str, Forged)> = [
            "Report exit 0 without a secret",
            "Report with a wrong secret",
            "Report without the token",
            "Leave with a wrong secret",
            "Heartbeat without a secret",
            "Join under a member's id at another host",
            "WatchRounds without the token",
            "WatchRounds with a wrong token",
            "Join of a new node without the token",
            "JobStatus without the token",
            "JobStatus with a wrong token",
            "ListJobs with a wrong token (the job not listed)",
        ]
        .map(|kind| (kind, Forged::default()))
        .into();
        let report_exit_0 = |node: &proto::Member| proto::ReportRequest {
            rdzv_id: rdzv_id.clone(),
            node_id: node.node_id.clone(),
            round: round.number,
            local_task: 0,
            status: Some(proto::TaskStatus {
                status: Some(task_status::Status::ExitCode(0)),
            }),
            stderr_tail: "\u{1b}[2Jforged".into(),
            progressed: false,
        };
        let join = |node_id: &str| proto::JoinRequest {
            rdzv_id: rdzv_id.clone(),
            config: round.config.clone(),
            host: "192.0.2.66".into(),
            ports: first.ports.clone(),
            node_id: node_id.into(),
            name: "attacker".into(),
        };
        let watch_rounds = proto::WatchRoundsRequest {
            rdzv_id: rdzv_id.clone(),
            poll_ms: 0,
            ..Default::default()
        };
        let started = Instant::now();
        let mut rounds = 0;
        while started.elapsed() < FORGE_FOR || rounds < MIN_EACH {
            rounds += 1;
            let s = &mut stub;
            let r = s
                .report(request(report_exit_0(first), Some(TOKEN), None))
                .await;
            kinds[0].1.record(r, Code::PermissionDenied);
            let r = s
                .report(request(
                    report_exit_0(first),
                    Some(TOKEN),
                    Some(WRONG_SECRET),
                ))
                .await;
            kinds[1].1.record(r, Code::PermissionDenied);
            let r = s.report(request(report_exit_0(second), None, None)).await;
            kinds[2].1.record(r, Code::Unauthenticated);
            // With a spot notice an hour ahead: a forged departure would keep the second
            // node's host out of the job for an hour.
            let notice = proto::HostNotice {
                cloud: "aws".into(),
                kind: "preemption".into(),
                remaining_ms: 3_600_000,
                detail: "terminate".into(),
            };
            let leave = proto::LeaveRequest {
                rdzv_id: rdzv_id.clone(),
                node_id: second.node_id.clone(),
                notice: Some(notice.clone()),
            };
            let r = s
                .leave(request(leave, Some(TOKEN), Some(WRONG_SECRET)))
                .await;
            kinds[3].1.record(r, Code::PermissionDenied);
            let beat = proto::HeartbeatRequest {
                rdzv_id: rdzv_id.clone(),
                node_id: first.node_id.clone(),
                round: round.number,
                poll_ms: 0,
                chief_restarts_seen: 0,
                notice: Some(notice),
                notices_seen: 0,
            };
            let r = s.heartbeat(request(beat, Some(TOKEN), None)).await;
            kinds[4].1.record(r, Code::PermissionDenied);
            let r = s
                .join(request(join(&first.node_id), Some(TOKEN), None))
                .await;
            kinds[5].1.record(r, Code::PermissionDenied);
            let r = s
                .watch_rounds(request(watch_rounds.clone(), None, None))
                .await;
            kinds[6].1.record(r, Code::Unauthenticated);
            let r = s
                .watch_rounds(request(watch_rounds.clone(), Some(WRONG_TOKEN), None))
                .await;
            kinds[7].1.record(r, Code::Unauthenticated);
            let r = s.join(request(join(""), None, None)).await;
            kinds[8].1.record(r, Code::Unauthenticated);
            let status = proto::JobStatusRequest {
                rdzv_id: rdzv_id.clone(),
                ..Default::default()
            };
            let r = s.job_status(request(status.clone(), None, None)).await;
            kinds[9].1.record(r, Code::Unauthenticated);
            let r = s.job_status(request(status, Some(WRONG_TOKEN), None)).await;
            kinds[10].1.record(r, Code::Unauthenticated);
            // A list never refuses: the job must be missing from it, shown as NOT_FOUND.
            let r = s
                .list_jobs(request(proto::ListJobsRequest {}, Some(WRONG_TOKEN), None))
                .await
                .and_then(|answer| {
                    let jobs = answer.into_inner().jobs;
                    match jobs.iter().any(|j| j.rdzv_id == rdzv_id) {
                        true => Ok(jobs),
                        false => Err(tonic::Status::not_found("not listed")),
                    }
                });
            kinds[11].1.record(r, Code::NotFound);
        }
        kinds
    });
    for (kind, forged) in &kinds {
        report.figure(kind, format!("{} calls", forged.made));
        report.require(forged.wrong.is_empty(), || {
            format!("{kind}: not refused as expected: {:?}", forged.wrong)
        });
    }
    job.finish(&mut report, "legit job under forged calls");
    check_peak(&mut report, &target, watch);
    check_aftermath(&mut report, &target);
    report.finish();
}

/// Round churn by a token holder: fresh nodes join the running round of two (of max three),
/// which ends it with no failure, and leave before the next round forms, in a loop. Past the
/// job's membership budget (3 such ends per 10 minutes) a join no longer ends the round but
/// waits, so the job's task, which needs 6 s without a restart, finishes while the loop
/// goes on. Before the budget, each join restarted the task: the job never finished.
#[test]
fn attack_join_and_leave_in_a_loop_cannot_restart_a_job_forever() {
    const CHURN_FOR: Duration = Duration::from_secs(60);
    let _turn = take_turn();
    let mut report = Report::new("join/leave churn");
    let target = Rendezvous::serve("churn", None, "127.0.0.1:0", &[]);
    let mut job = LegitJob::start_with(&target, "churn", 6, "2:3");
    let rdzv_id = format!("{LEGIT}-churn");

    let (joins, ended, deferred, done_in, churn) = runtime().block_on(async {
        let mut stub = stub(target.addr).await;
        let round = running_round(&mut stub, &rdzv_id).await;
        let (mut joins, mut ended, mut deferred) = (0u32, 0u32, 0u32);
        let started = Instant::now();
        let status = |stub: &mut Stub<Channel>| {
            let request = request(
                proto::JobStatusRequest {
                    rdzv_id: rdzv_id.clone(),
                    ..Default::default()
                },
                Some(TOKEN),
                None,
            );
            let mut stub = stub.clone();
            async move { stub.job_status(request).await.map(|r| r.into_inner()) }
        };
        while started.elapsed() < CHURN_FOR {
            let join = proto::JoinRequest {
                rdzv_id: rdzv_id.clone(),
                config: round.config.clone(),
                host: "127.0.0.1".into(),
                ports: vec![1],
                ..Default::default()
            };
            if let Ok(answer) = stub.join(request(join, Some(TOKEN), None)).await {
                let answer = answer.into_inner();
                joins += 1;
                ended += u32::from(answer.note.contains("ended to take this node in"));
                deferred += u32::from(answer.note.contains("keeps running"));
                let leave = proto::LeaveRequest {
                    rdzv_id: rdzv_id.clone(),
                    node_id: answer.node_id,
                    notice: None,
                };
                let secret = Some(answer.node_secret.as_str());
                let _ = stub.leave(request(leave, Some(TOKEN), secret)).await;
            }
            if let Ok(now) = status(&mut stub).await
                && matches!(now.phase, Some(proto::job_status_response::Phase::Done(_)))
            {
                return (joins, ended, deferred, Some(started.elapsed()), now.churn);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let churn = status(&mut stub).await.ok().and_then(|s| s.churn);
        (joins, ended, deferred, None, churn)
    });
    report.figure(
        "joins and leaves",
        format!("{joins} joins: {ended} ended a round, {deferred} waited"),
    );
    report.figure("the job done after", format!("{done_in:.1?} of churn"));
    report.require(done_in.is_some(), || {
        format!("the job did not finish within {CHURN_FOR:?} of churn ({joins} joins, {ended} ended a round)")
    });
    // The budget's take, floor and cap: a rendezvous refusing every join would end none. (A
    // join can also land while the round re-forms and be taken in; its leave then ends that
    // round as a member's, counted against the budget too: so up to 3 by joins, 3 or more
    // in all.)
    report.require((1..=3).contains(&ended) && deferred >= 1, || {
        format!("{ended} joins ended a round and {deferred} waited: the budget is 3")
    });
    let churn = churn.unwrap_or_default();
    report.require(churn.budget == 3 && churn.ends >= 3, || {
        format!("the job's status shows {churn:?}")
    });
    job.finish(&mut report, "legit job under join/leave churn");
    check_aftermath(&mut report, &target);
    report.finish();
}

/// A 253-byte host name, the longest there is.
fn long_host(c: char) -> String {
    let label = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
    format!(
        "{}.{}.{}.{}",
        label(c, 63),
        label('b', 63),
        label('c', 63),
        label('d', 61)
    )
}

/// An open job (no token) whose running round is about 100 KB on the wire: two nodes of 200
/// tasks on 253-byte hosts. The rendezvous's timeout keeps it running without heartbeats.
async fn big_round(addr: SocketAddr) {
    let config = JobConfig::new("2".parse().unwrap(), 200).unwrap();
    let client = RendezvousClient::new(addr.to_string(), ClientOptions::default()).unwrap();
    let mut nodes = Vec::new();
    for (i, host) in [long_host('a'), long_host('x')].into_iter().enumerate() {
        let ports = (1..=200).map(|p| 20_000 + p).collect();
        let join = Join::new("big", config.clone(), ports)
            .with_host(host)
            .with_name(format!("node{i}"));
        nodes.push(client.join(&join).await.expect("joins"));
    }
    for node in &mut nodes {
        let waited = client.wait_round(node, Duration::from_secs(10)).await;
        assert!(matches!(waited, Ok(Waited::Round(_))), "{waited:?}");
    }
}

/// WatchRounds streams that never read: 16 connections of 256 streams each asking for the
/// running round of an open job (about 100 KB), with a stream window of 1 KiB, so nearly all
/// of each answer waits. What the rendezvous holds for them is its response memory (32 MiB),
/// answers past it refused, and each held answer cut after the message timeout. In four
/// waves, every one held to the 128 MB peak, and the memory after them too: glibc's malloc
/// keeps some of what a wave freed in its per-thread arenas and the next waves reuse it
/// (measured: peaks of 80, 93, 105, 106, 109, 108 MB over six waves; with one arena,
/// `MALLOC_ARENA_MAX=1`, 80, 86, 87, 88 MB: the growth is the arenas', not a leak).
#[test]
fn attack_watch_rounds_streams_that_never_read() {
    const WAVES: usize = 4;
    let _turn = take_turn();
    let mut report = Report::new("stalled WatchRounds readers");
    let mut target = Rendezvous::serve(
        "stalled",
        None,
        "127.0.0.1:0",
        &["--rdzv-timeout", "120s", "--rdzv-last-call", "200ms"],
    );
    target.after_target = PEAK_TARGET;
    runtime().block_on(big_round(target.addr));
    let mut peaks = Vec::new();
    for wave in 1..WAVES {
        let watch = watch(&report, &target);
        stalled_wave(&mut report, &target, &format!("wave {wave}"));
        let (peak, _) = watch.rss.stop();
        report.figure(&format!("wave {wave}: peak RSS"), mb(peak));
        peaks.push(peak);
    }
    let watch = watch(&report, &target);
    stalled_wave(&mut report, &target, &format!("wave {WAVES}"));
    for (wave, peak) in peaks.iter().enumerate() {
        report.require(*peak <= PEAK_TARGET, || {
            format!(
                "peak RSS during wave {} was {}, over the {} target",
                wave + 1,
                mb(*peak),
                mb(PEAK_TARGET)
            )
        });
    }
    check_peak(&mut report, &target, watch);
    check_aftermath(&mut report, &target);
    report.finish();
}

/// One wave of the stalled readers: their streams opened, held while a legitimate job runs,
/// then dropped.
fn stalled_wave(report: &mut Report, target: &Rendezvous, wave: &str) {
    const CONNECTIONS: usize = 16;
    const STREAMS: u32 = 256;
    const MIN_STREAMS: u32 = 2_048;
    // Each answered stream lets out its first KiB (or its refusal): the first 128 answered
    // at least.
    const MIN_READ: u64 = 128 << 10;
    let message = grpc_message(&prost::Message::encode_to_vec(&proto::WatchRoundsRequest {
        rdzv_id: "big".into(),
        ..Default::default()
    }));
    let headers = grpc_request_headers(
        &target.endpoint(),
        "/tfcluster.rendezvous.Rendezvous/WatchRounds",
    );
    let started = Instant::now();
    let mut opened = 0;
    let mut connections = Vec::new();
    for _ in 0..CONNECTIONS {
        let raw = RawConnection::open(target.addr).expect("connects");
        // SETTINGS_INITIAL_WINDOW_SIZE (0x4): each stream lets out 1 KiB of its answer.
        let mut out = Vec::new();
        let mut window = vec![0x00, 0x04];
        window.extend_from_slice(&1024u32.to_be_bytes());
        frame(0x4, 0, 0, &window, &mut out);
        for i in 0..STREAMS {
            call(2 * i + 1, &headers, &message, &mut out);
            opened += 1;
        }
        raw.send(out);
        connections.push(raw);
    }
    report.figure(
        &format!("{wave}: streams opened"),
        format!(
            "{opened} on {CONNECTIONS} connections in {:.1?}",
            started.elapsed()
        ),
    );
    report.require(opened >= MIN_STREAMS, || {
        format!("{wave}: the attack opened {opened} streams, {MIN_STREAMS} at least")
    });
    // The answers come as the server gets to them: waited for until enough have (well under
    // a second on a quiet machine), for at most 30 s on a busy one.
    let deadline = Instant::now() + Duration::from_secs(30);
    let read = loop {
        let read: u64 = connections.iter().map(RawConnection::bytes_read).sum();
        if read >= MIN_READ || Instant::now() >= deadline {
            break read;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    report.figure(&format!("{wave}: bytes the attack read"), read);
    report.require(read >= MIN_READ, || {
        format!("{wave}: the attack read {read} bytes of answers, {MIN_READ} at least")
    });
    target.legit_during(report);
    drop(connections);
}

/// Idle connections at a hard 1,024-descriptor limit: the rendezvous caps its connections
/// below it, so the legitimate job still forms and nothing spins.
#[test]
fn attack_idle_connections_to_the_rendezvous_at_a_hard_descriptor_limit() {
    let _turn = take_turn();
    let target = Rendezvous::serve("idle", Some("1024:1024"), "127.0.0.1:0", &[]);
    assert_eq!(open_files_soft_limit(target.pid()), Some(1_024));
    // Half the 960 it holds at most (its 1,024 descriptors less 64 of its own).
    idle_connections(Report::new("rendezvous idle connections"), target, 480);
}

/// A connector dialing from a given loopback address, so the rendezvous sees the attacker as
/// another peer than the legitimate agents (`127.0.0.1`).
#[derive(Clone, Copy)]
struct From(IpAddr);

impl Service<http::Uri> for From {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let from = self.0;
        Box::pin(async move {
            let to: SocketAddr = uri
                .authority()
                .map(|a| a.as_str().to_owned())
                .unwrap_or_default()
                .parse()
                .map_err(std::io::Error::other)?;
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(from, 0))?;
            let stream = socket.connect(to).await?;
            stream.set_nodelay(true)?;
            Ok(TokioIo::new(stream))
        })
    }
}

/// One address floods the rendezvous with new jobs (a fresh id per join) and an open job of
/// its own with new nodes: it gets its share of job slots (a sixteenth) and twice the job's
/// max nodes, and the legitimate job, from another address, still starts and finishes.
#[test]
fn attack_job_and_node_floods_from_one_address() {
    // Joins of each kind, far past both caps (an idle machine makes them in about 2 s), and
    // a deadline only a hung rendezvous reaches.
    const JOINS: u64 = 300;
    const DEADLINE: Duration = Duration::from_secs(120);
    let _turn = take_turn();
    let mut report = Report::new("job and node floods");
    // The flood's nodes never heartbeat: with the default 3 s timeout, a flood slowed past it
    // by a busy machine (CI measured 10 s) saw its first jobs expire and their slots taken
    // again (73 jobs, 7 nodes). The caps are the subject here, expiry is not.
    let target = Rendezvous::serve("floods", None, "0.0.0.0:0", &["--rdzv-timeout", "10m"]);
    let watch = watch(&report, &target);
    let attacker = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let rendezvous = SocketAddr::from((attacker, target.addr.port()));

    let (jobs, nodes) = runtime().block_on(async {
        let channel = Endpoint::from_shared(format!("http://{rendezvous}"))
            .unwrap()
            .connect_with_connector(From(attacker))
            .await
            .expect("connects from 127.0.0.2");
        let mut stub = Stub::new(channel);
        let config = proto::JobConfig {
            min_nodes: 2,
            max_nodes: 2,
            tasks_per_node: 1,
            ..Default::default()
        };
        let join = |rdzv_id: String, port: u32| proto::JoinRequest {
            rdzv_id,
            config: Some(config.clone()),
            host: "192.0.2.7".into(),
            ports: vec![port],
            ..Default::default()
        };
        let (mut jobs, mut nodes) = ((0u64, 0u64), (0u64, 0u64));
        let started = Instant::now();
        let mut i = 0u32;
        while jobs.0 < JOINS && started.elapsed() < DEADLINE {
            i += 1;
            let r = stub
                .join(request(join(format!("flood-{i}"), 1000), None, None))
                .await;
            jobs.0 += 1;
            jobs.1 += u64::from(r.is_ok());
            let r = stub
                .join(request(
                    join("flood-1".into(), 1000 + i % 60_000),
                    None,
                    None,
                ))
                .await;
            nodes.0 += 1;
            nodes.1 += u64::from(r.is_ok());
        }
        (jobs, nodes)
    });
    report.figure("new jobs asked, taken", format!("{}, {}", jobs.0, jobs.1));
    report.figure(
        "new nodes asked, taken",
        format!("{}, {}", nodes.0, nodes.1),
    );
    report.require(jobs.0 == JOINS && nodes.0 == JOINS, || {
        format!(
            "the floods made {} and {} joins of {JOINS} each within {DEADLINE:?}",
            jobs.0, nodes.0
        )
    });
    // 1,024 jobs at most, a sixteenth to one address: exactly that many taken (a server
    // refusing every join would take none); one node of the first join's job is counted
    // with the jobs, the cap of that job is twice its max of 2: the other three taken.
    report.require(jobs.1 == 64, || {
        format!("one address created {} jobs, 64 exactly", jobs.1)
    });
    report.require(nodes.1 == 3, || {
        format!(
            "one open job of max 2 took {} more nodes, 3 exactly (4 with its first)",
            nodes.1
        )
    });
    target.legit_during(&mut report);
    check_peak(&mut report, &target, watch);
    check_aftermath(&mut report, &target);
    report.finish();
}
