//! `tfcluster run --rdzv` on loopback: two agents (one serving the rendezvous) forming a job
//! of 2 hosts × 2 tasks, restarting it after a failure, failing it past `--max-restarts`,
//! an unreachable rendezvous, each local task's share of the host's GPUs, and hung tasks
//! (`--watchdog`) reported with their stack and restarted, with real TensorFlow. The tasks
//! are mostly `sh -c` scripts that print their identity; every agent is a [`Launch`],
//! stopped and reaped when its test ends.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Prints `seen RANK LOCAL ROUND RESTARTS TF_CONFIG`, then acts on `$PLAN`: `ok` exits 0;
/// `fail-once` exits 3 (after a line on stderr) for node 1's local task 1 the first time
/// (a marker file in `$DIR` remembers it), else 0; `fail` always exits 4; `serve` exits 0
/// for the chief and serves (sleeps) until stopped for every other task; `deaf-once`, in
/// round 1, exits 3 for node 1's local task 1 while the others ignore SIGTERM (as
/// TensorFlow's workers do), and exits 0 in later rounds.
const TASK: &str = r#"
echo "seen $TFCLUSTER_NODE_RANK $TFCLUSTER_LOCAL_TASK $TFCLUSTER_ROUND $TFCLUSTER_RESTART_COUNT $TF_CONFIG"
case "$PLAN" in
  fail-once)
    if [ "$TFCLUSTER_NODE_RANK$TFCLUSTER_LOCAL_TASK" = 11 ] && [ ! -e "$DIR/failed" ]; then
      touch "$DIR/failed"; echo "failing on purpose" >&2; exit 3
    fi ;;
  fail) echo "bad step in round $TFCLUSTER_ROUND" >&2; exit 4 ;;
  deaf-once)
    if [ "$TFCLUSTER_ROUND" = 1 ]; then
      [ "$TFCLUSTER_NODE_RANK$TFCLUSTER_LOCAL_TASK" = 11 ] && exit 3
      trap '' TERM; while :; do sleep 0.1; done
    fi ;;
  serve)
    case "$TF_CONFIG" in
      *'"task":{"type":"chief"'*) ;;
      *) exec sleep 1000 ;;
    esac ;;
esac
sleep 0.3
"#;

/// A port of loopback free when drawn. It is released at once, so another process may bind
/// it before the agent meant to serve the rendezvous there does: [`serving`] tells.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// What an agent says once it has tried to bind its rendezvous endpoint: the first if
/// another process holds it (a debug line, which [`serving`] shows), the second if it serves.
const BIND_LOST: &str = "not serving the rendezvous here";
const BIND_WON: &str = "serving the rendezvous";

/// The agent `start(endpoint, log)` makes, serving the rendezvous at `endpoint`
/// (`127.0.0.1:PORT`, a fresh port), and that endpoint. `log` is the `RUST_LOG` variable
/// under which the agent says whether it won the bind; one that lost it (the port was taken
/// between its draw and the bind) is stopped, and the next tries a new port. An agent that
/// exits before it binds (a dry run, an error at start) is returned as it is.
pub(super) fn serving(start: impl Fn(&str, (&str, &str)) -> Launch) -> (Launch, String) {
    const TRIES: usize = 5;
    let log = match std::env::var("RUST_LOG") {
        Ok(log) => format!("{log},tfcluster::run_rdzv=debug"),
        Err(_) => "warn,tfcluster::run_rdzv=debug".to_owned(),
    };
    for _ in 0..TRIES {
        let endpoint = format!("127.0.0.1:{}", free_port());
        let mut agent = start(&endpoint, ("RUST_LOG", &log));
        if agent.says_first(&[BIND_LOST, BIND_WON], TIMEOUT) != Some(BIND_LOST) {
            return (agent, endpoint);
        }
        // It has joined nothing and started nothing; stopped as a user would, it would
        // wait out its --rdzv-timeout trying to join.
        agent.signal(nix::sys::signal::Signal::SIGKILL);
        eprintln!("{endpoint} was taken before the agent could serve it: a new port");
    }
    panic!("{TRIES} ports of loopback were each taken before the agent could serve it")
}

/// A fresh directory for one test's files, removed when the test ends.
pub(super) fn scratch(test: &str) -> TempDir {
    super::scratch(&format!("elastic-{test}"))
}

/// The only agent of a one-host job, on a fresh port of loopback (one host forms the round
/// after a 100 ms last call): `tfcluster run --rdzv 127.0.0.1:PORT ARGS` (flags, then `--`
/// and the command when there is one), with `env` added and the variables `remove` taken out.
pub(super) fn lone_agent(args: &[&str], env: &[(&str, &str)], remove: &[&str]) -> Launch {
    let (agent, _) = serving(|endpoint, log| {
        let head = ["run", "--rdzv", endpoint, "--rdzv-last-call", "100ms"];
        let env = [env, &[log]].concat();
        Launch::start_without(&[&head[..], args].concat(), &env, remove)
    });
    agent
}

/// Two agents of one job, each running TASK with `plan`, plus `extra` flags; the first
/// serves the rendezvous.
fn two_agents(dir: &Path, plan: &str, extra: &[&str]) -> [Launch; 2] {
    let flags = [&["--tasks-per-node", "2", "--grace", "2s"], extra].concat();
    two_agents_running(dir, &[("PLAN", plan)], &flags, &["sh", "-c", TASK])
}

/// Two agents of a 2-node job on a fresh port, with `flags`, each running `command` with
/// `env` (and `DIR`, where each writes its `--error-file`, `a.json` and `b.json`); the second
/// starts once the first serves the rendezvous.
pub(super) fn two_agents_running(
    dir: &Path,
    env: &[(&str, &str)],
    flags: &[&str],
    command: &[&str],
) -> [Launch; 2] {
    two_agents_at(dir, env, flags, command).0
}

/// [`two_agents_running`]'s agents, and the rendezvous the first serves (`127.0.0.1:PORT`).
pub(super) fn two_agents_at(
    dir: &Path,
    env: &[(&str, &str)],
    flags: &[&str],
    command: &[&str],
) -> ([Launch; 2], String) {
    let dir = dir.to_str().expect("a UTF-8 path");
    let env = [env, &[("DIR", dir)]].concat();
    let agent = |name: &str, endpoint: &str, log: &[(&str, &str)]| {
        let error_file = format!("{dir}/{name}.json");
        let mut args = vec![
            "run",
            "--rdzv",
            endpoint,
            "--nodes",
            "2",
            "--rdzv-last-call",
            "1s",
            "--error-file",
            &error_file,
        ];
        args.extend(super::unhurried(flags));
        args.push("--");
        args.extend_from_slice(command);
        Launch::start(&args, &[&env[..], log].concat())
    };
    let (first, endpoint) = serving(|endpoint, log| agent("a", endpoint, &[log]));
    let second = agent("b", &endpoint, &[]);
    ([first, second], endpoint)
}

/// The `seen` lines of both agents, split into fields: rank, local task, round, restarts,
/// TF_CONFIG.
fn seen(agents: &[Launch; 2]) -> Vec<(u32, u32, u64, u32, serde_json::Value)> {
    agents
        .iter()
        .flat_map(|a| a.stdout().lines().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|line| {
            let rest = line.split_once("] seen ")?.1.to_owned();
            let mut fields = rest.splitn(5, ' ');
            let mut next = || fields.next().expect("five fields").to_owned();
            Some((
                next().parse().unwrap(),
                next().parse().unwrap(),
                next().parse().unwrap(),
                next().parse().unwrap(),
                serde_json::from_str(&next()).expect("TF_CONFIG is JSON"),
            ))
        })
        .collect()
}

/// Waits for both agents and asserts their exit codes (`None`: still running after
/// `timeout`), showing both agents' output if not.
pub(super) fn expect_exits(agents: &mut [Launch; 2], timeout: Duration, expected: [i32; 2]) {
    let codes = agents
        .each_mut()
        .map(|agent| agent.exited_within(timeout).map(|s| s.code().unwrap_or(-1)));
    assert_eq!(
        codes,
        expected.map(Some),
        "--- a's stdout ---\n{}\n--- a's stderr ---\n{}\n--- b's stdout ---\n{}\n--- b's stderr ---\n{}",
        agents[0].stdout(),
        agents[0].stderr(),
        agents[1].stdout(),
        agents[1].stderr()
    );
}

#[test]
fn two_agents_give_every_task_the_same_cluster_and_its_own_task() {
    let dir = scratch("same-cluster");
    let mut agents = two_agents(dir.path(), "ok", &[]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    let seen = seen(&agents);
    assert_eq!(seen.len(), 4, "{seen:?}");
    let cluster = &seen[0].4["cluster"];
    let workers = cluster["worker"].as_array().expect("workers");
    assert_eq!(workers.len(), 4, "{cluster}");
    let mut indices = Vec::new();
    for (rank, local, round, restarts, tf_config) in &seen {
        assert_eq!(
            &tf_config["cluster"], cluster,
            "every task sees one cluster"
        );
        assert_eq!((*round, *restarts), (1, 0));
        assert_eq!(tf_config["task"]["type"], "worker");
        let index = tf_config["task"]["index"].as_u64().unwrap();
        // Workers only: a task's index is its place in the job.
        assert_eq!(
            index,
            u64::from(rank * 2 + local),
            "tasks are consecutive per node"
        );
        indices.push(index);
    }
    indices.sort_unstable();
    assert_eq!(indices, [0, 1, 2, 3]);
    let mut addresses: Vec<&str> = workers.iter().map(|w| w.as_str().unwrap()).collect();
    addresses.dedup();
    assert_eq!(addresses.len(), 4, "each task its own port: {cluster}");
    // Output lines are behind `[host/job:index]`.
    assert!(
        agents[0].stdout().contains("[127.0.0.1/worker:"),
        "{}",
        agents[0].stdout()
    );
}

#[test]
fn a_task_failing_once_restarts_both_agents_and_the_job_completes() {
    let dir = scratch("fail-once");
    let mut agents = two_agents(dir.path(), "fail-once", &[]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    assert!(dir.path().join("failed").exists(), "the task failed once");
    let seen = seen(&agents);
    let second: Vec<_> = seen.iter().filter(|s| s.3 == 1).collect();
    assert_eq!(
        second.len(),
        4,
        "all four tasks ran again, with restart count 1: {seen:?}"
    );
    assert!(
        second.iter().all(|s| s.2 >= 2),
        "in a later round: {seen:?}"
    );
}

#[test]
fn a_failure_kills_the_deaf_survivors_at_once_whatever_the_grace() {
    // The survivors ignore SIGTERM, as TensorFlow's workers do; with no --failure-grace they
    // are killed at once, so the restart waits none of the long --grace.
    let dir = scratch("deaf-fast");
    let flags = ["--tasks-per-node", "2", "--grace", "60s"];
    let env = [("PLAN", "deaf-once")];
    let start = std::time::Instant::now();
    let mut agents = two_agents_running(dir.path(), &env, &flags, &["sh", "-c", TASK]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    let second: Vec<_> = seen(&agents).into_iter().filter(|s| s.2 == 2).collect();
    assert_eq!(second.len(), 4, "round 2 ran every task: {second:?}");
    // Loose: an order of magnitude below the grace catches a grace waited out.
    let took = start.elapsed();
    assert!(took < Duration::from_secs(30), "the job took {took:?}");
}

#[test]
fn tasks_stopping_for_longer_than_the_rdzv_timeout_do_not_lose_their_hosts() {
    // The deaf tasks take the whole 8 s failure grace to stop, longer than the 3 s a host
    // may be silent: the agents keep talking to the rendezvous meanwhile. (With 1 s, a
    // heartbeat every 333 ms, an agent stalled 0.7 s on a loaded machine was lost: a flake.)
    let dir = scratch("deaf");
    let flags = [
        "--tasks-per-node",
        "2",
        "--failure-grace",
        "8s",
        "--rdzv-timeout",
        "3s",
    ];
    let env = [("PLAN", "deaf-once")];
    let mut agents = two_agents_running(dir.path(), &env, &flags, &["sh", "-c", TASK]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    let second: Vec<_> = seen(&agents).into_iter().filter(|s| s.2 == 2).collect();
    assert_eq!(second.len(), 4, "round 2 ran every task: {second:?}");
    assert!(second.iter().all(|s| s.3 == 1), "{second:?}");
}

#[test]
fn a_job_failing_past_max_restarts_fails_on_every_host_naming_the_first_failure() {
    let dir = scratch("fail");
    // The same failure each round would be a crash loop, which stops the job earlier.
    let flags = ["--max-restarts", "1", "--allow-crash-loops"];
    let mut agents = two_agents(dir.path(), "fail", &flags);
    expect_exits(&mut agents, TIMEOUT, [1, 1]);
    for (agent, name) in agents.iter().zip(["a", "b"]) {
        let stderr = agent.stderr();
        assert!(stderr.contains("the job failed in round 2"), "{stderr}");
        assert!(stderr.contains("first failure: task worker:"), "{stderr}");
        assert!(
            stderr.contains("on 127.0.0.1) exited with status 4 in round 1"),
            "{stderr}"
        );
        assert!(
            stderr.contains("its stderr ended with:\nbad step in round 1"),
            "{stderr}"
        );
        let record =
            std::fs::read_to_string(dir.path().join(format!("{name}.json"))).expect("error file");
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        let first = &record["first_failure"];
        assert_eq!(first["host"], "127.0.0.1");
        assert_eq!(first["status"], "exited with status 4");
        assert_eq!(first["round"], 1);
        assert_eq!(first["stderr_tail"], "bad step in round 1\n");
    }
}

#[test]
fn an_unreachable_rendezvous_fails_within_the_timeout() {
    // A loopback port held by a socket that is bound but never listens: the agent cannot
    // bind it to serve (the socket has no SO_REUSEADDR), and every connection to it is
    // refused, so nothing answers there. Loopback only: no packet leaves the machine.
    let held = tokio::net::TcpSocket::new_v4().expect("a socket");
    held.bind("127.0.0.1:0".parse().unwrap())
        .expect("a loopback port");
    let endpoint = held.local_addr().expect("its address").to_string();
    let started = Instant::now();
    let mut agent = Launch::start(
        &[
            "run",
            "--rdzv",
            &endpoint,
            "--rdzv-timeout",
            "2s",
            "--",
            "true",
        ],
        &[],
    );
    let status = agent.wait(TIMEOUT);
    assert_eq!(status.code(), Some(1), "{}", agent.stderr());
    let stderr = agent.stderr();
    assert!(
        stderr.contains(&format!(
            "rendezvous at {endpoint} unreachable for 2.0 s (Join)"
        )),
        "{stderr}"
    );
    // The whole wait is bounded generously: the verdict is the message, not the clock.
    assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    drop(held);
}

#[test]
fn bad_rdzv_flags_are_usage_errors_naming_flag_and_value() {
    for (flag, value, says) in [
        ("--nodes", "3:2", "--nodes"),
        ("--layout", "chief=x", "--layout"),
        ("--rdzv", "h:0", "--rdzv"),
        ("--gpus-per-task", "two", "--gpus-per-task"),
    ] {
        let mut args = vec!["run", "--rdzv", "127.0.0.1:1"];
        if flag == "--rdzv" {
            args.clear();
            args.push("run");
        }
        args.extend_from_slice(&[flag, value, "--", "true"]);
        let mut launch = Launch::start(&args, &[]);
        assert_eq!(launch.wait(TIMEOUT).code(), Some(2), "{}", launch.stderr());
        let stderr = launch.stderr();
        assert!(stderr.contains(says) && stderr.contains(value), "{stderr}");
    }
}

#[test]
fn sigterm_stops_an_agent_and_its_tasks() {
    // The task hangs until stopped.
    let agent = lone_agent(
        &["--", "sh", "-c", "echo pid $$; exec sleep 1000"],
        &[],
        &[],
    );
    let line = agent.lines_with(" pid ", 1, TIMEOUT).remove(0);
    let pid: u32 = line.rsplit(' ').next().unwrap().parse().unwrap();
    let mut agent = agent;
    agent.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(143), "{}", agent.stderr());
    super::launch::assert_all_gone(&[pid]);
}

#[test]
fn multi_worker_mirrored_training_across_two_agents() {
    let script = super::tf_script("mwms_train.py");
    let dir = scratch("mwms");
    let command = [script[0].as_str(), script[1].as_str()];
    let mut agents = two_agents_running(
        dir.path(),
        &[],
        &["--tasks-per-node", "1", "--grace", "10s"],
        &command,
    );
    // Importing TensorFlow on a loaded two-core machine takes a while.
    expect_exits(&mut agents, Duration::from_secs(300), [0, 0]);
    let stdout = agents[0].stdout() + &agents[1].stdout();
    let digests: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once("] cluster ").map(|(_, digest)| digest))
        .collect();
    assert_eq!(digests.len(), 2, "{stdout}");
    assert_eq!(
        digests[0], digests[1],
        "both workers saw one cluster: {stdout}"
    );
    for task in ["worker:0", "worker:1"] {
        assert!(
            stdout.contains(&format!("/{task}] mwms ok {task} replicas=2 steps=30")),
            "{stdout}"
        );
    }
}

#[test]
fn a_hung_tensorflow_task_is_killed_with_its_stack_and_the_next_round_completes() {
    // Round 1 hangs in `stuck()` once TensorFlow is imported; round 2 succeeds.
    let script = super::tf_script("hang_once.py");
    let mut agent = lone_agent(
        &[
            "--max-restarts",
            "1",
            "--grace",
            "2s",
            // The start period (60 s by default) covers a slow, quiet import of TensorFlow on
            // a loaded machine; the hang comes after it.
            "--watchdog",
            "5s",
            "--",
            &script[0],
            &script[1],
        ],
        &[],
        &[],
    );
    // Importing TensorFlow (twice) on a loaded two-core machine takes a while.
    assert_eq!(
        agent.wait(Duration::from_secs(300)).code(),
        Some(0),
        "{}",
        agent.stderr()
    );
    let stdout = agent.stdout();
    for line in ["restart count 0", "restart count 1", "/worker:0] done"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}");
    }
    // The agent said why it killed the task, and the task's stack, asked for with TensorFlow
    // loaded, names the script's own function.
    let stderr = agent.stderr();
    assert!(
        stderr.contains("no progress: the task is hung; asking for its stack and killing it"),
        "{stderr}"
    );
    let frame = format!("File \"{}\", line", script[1]);
    assert!(
        stderr
            .lines()
            .any(|line| line.contains(&frame) && line.ends_with(" in stuck")),
        "{stderr}"
    );
}

#[test]
fn a_hung_task_past_max_restarts_is_the_first_failure_with_its_stack() {
    let dir = scratch("hung");
    let error_file = dir.path().join("error.json");
    let python = tf_oracle::python();
    let stuck =
        "import time\ndef stuck():\n    time.sleep(1e9)\nprint('up', flush=True)\nstuck()\n";
    let mut agent = lone_agent(
        &[
            "--max-restarts",
            "0",
            "--watchdog",
            "2s",
            "--watchdog-start",
            "0s",
            "--error-file",
            error_file.to_str().unwrap(),
            "--",
            python.to_str().unwrap(),
            "-c",
            stuck,
        ],
        &[],
        &[],
    );
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    let stderr = agent.stderr();
    assert!(
        stderr.contains("on 127.0.0.1) hung: no progress for 2s in round 1"),
        "{stderr}"
    );
    let (_, tail) = stderr
        .split_once("its stderr ended with:\n")
        .unwrap_or_else(|| panic!("no tail in:\n{stderr}"));
    assert!(tail.contains("line 3 in stuck"), "{tail}");
    let record = std::fs::read_to_string(&error_file).expect("error file");
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    let first = &record["first_failure"];
    assert_eq!(first["status"], "hung: no progress for 2s");
    let tail = first["stderr_tail"].as_str().unwrap();
    assert!(
        tail.contains("Fatal Python error: Aborted") && tail.contains("line 3 in stuck"),
        "{tail}"
    );
}

#[test]
fn a_missing_program_fails_the_job_naming_it() {
    let mut agent = lone_agent(&["--max-restarts", "0", "--", "/no/such/program"], &[], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    let stderr = agent.stderr();
    assert!(
        stderr.contains("could not run: cannot run /no/such/program"),
        "{stderr}"
    );
}

#[test]
fn a_health_check_that_cannot_run_fails_the_agent_at_its_start() {
    let flags = ["--health-check", "/no/such/check --gpu", "--", "true"];
    let mut agent = lone_agent(&flags, &[], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    let stderr = agent.stderr();
    assert!(
        stderr.contains("health check `/no/such/check --gpu` exited with status 127: ")
            && stderr.contains("(the command cannot run here, so the host could never join)"),
        "{stderr}"
    );
}

#[test]
fn a_layout_places_chief_and_ps_first_and_the_chief_ends_the_job_on_both_hosts() {
    let dir = scratch("layout");
    let started = Instant::now();
    let mut agents = two_agents(dir.path(), "serve", &["--layout", "chief=1,ps=1"]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    // The chief's success ends the job; the serving tasks get the 2 s grace, then a stop.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let seen = seen(&agents);
    assert_eq!(seen.len(), 4, "{seen:?}");
    let cluster = &seen[0].4["cluster"];
    let count = |job: &str| cluster[job].as_array().map_or(0, Vec::len);
    assert_eq!(
        (count("chief"), count("ps"), count("worker")),
        (1, 1, 2),
        "{cluster}"
    );
    let tasks: Vec<(u32, u32, String)> = seen
        .iter()
        .map(|(rank, local, _, _, tf)| {
            let task = &tf["task"];
            (
                *rank,
                *local,
                format!("{}:{}", task["type"].as_str().unwrap(), task["index"]),
            )
        })
        .collect();
    for expected in [
        (0, 0, "chief:0"),
        (0, 1, "ps:0"),
        (1, 0, "worker:0"),
        (1, 1, "worker:1"),
    ] {
        assert!(
            tasks.contains(&(expected.0, expected.1, expected.2.to_owned())),
            "{tasks:?}"
        );
    }
}

#[test]
fn agents_join_a_rendezvous_served_on_its_own() {
    let mut server = Launch::start(
        &[
            "rendezvous",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ],
        &[],
    );
    let line = server
        .lines_with("serving the rendezvous on ", 1, TIMEOUT)
        .remove(0);
    let endpoint = line.rsplit(' ').next().expect("an address").to_owned();
    let mut agent = Launch::start(
        &[
            "-v",
            "--log-format",
            "json",
            "run",
            "--rdzv",
            &endpoint,
            "--rdzv-id",
            "alone",
            "--",
            "sh",
            "-c",
            "echo round $TFCLUSTER_ROUND",
        ],
        &[],
    );
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    assert!(
        agent.stdout().contains("/worker:0] round 1"),
        "{}",
        agent.stdout()
    );
    server.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(server.wait(TIMEOUT).code(), Some(0), "{}", server.stderr());
    // Without -v, the server says each round it formed; --log-format json: a JSON object a
    // line, the agent's with its spans' fields (job, node, round and rank).
    let records = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    let served = records(&server.stderr());
    assert!(
        served
            .iter()
            .any(|r| r["fields"]["message"] == "round formed" && r["fields"]["rdzv_id"] == "alone"),
        "{served:?}"
    );
    let logged = records(&agent.stderr());
    assert!(
        logged.iter().any(|r| {
            let spans = r["spans"].as_array().map_or(&[][..], Vec::as_slice);
            spans
                .iter()
                .any(|s| s["name"] == "agent" && s["rdzv_id"] == "alone")
                && spans.iter().any(|s| s["name"] == "round" && s["rank"] == 0)
        }),
        "{logged:?}"
    );
}

#[test]
fn two_agents_over_mtls_form_the_job_and_finish() {
    let dir = scratch("mtls");
    let ca = tf_oracle::TestCa::new("rendezvous CA");
    // Either agent may serve: its certificate names the address the other dials.
    let files = ca.write(dir.path(), "agent", &["127.0.0.1"]);
    let flags = super::rdzv_tls_flags(&files.ca, &files.cert, &files.key);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut agents = two_agents(dir.path(), "ok", &flags);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    assert_eq!(seen(&agents).len(), 4, "{}", agents[0].stdout());
}

#[test]
fn an_agent_waiting_for_other_hosts_says_what_it_waits_for() {
    let agent = |endpoint: &str, log: &[(&str, &str)]| {
        let args = [
            "run",
            "--rdzv",
            endpoint,
            "--nodes",
            "2:3",
            "--rdzv-last-call",
            "30s",
            "--join-timeout",
            "5m",
            "--",
            "true",
        ];
        Launch::start(&args, log)
    };
    let (mut first, endpoint) = serving(|endpoint, log| agent(endpoint, &[log]));
    // While it waits (a quiet run: within a second of serving; the bound is for a busy
    // machine): the rendezvous, the hosts joined of MIN:MAX, the join timeout.
    let alone = format!(
        "tfcluster: waiting at {endpoint} for job \"default\": round 1 waits for nodes: 1 of \
         min 2 (max 3) have joined; waited "
    );
    assert!(
        first
            .says_first(&[&alone], Duration::from_secs(15))
            .is_some(),
        "{}",
        first.stderr()
    );
    assert!(
        first
            .stderr()
            .contains("of the 5m join timeout (--join-timeout)"),
        "{}",
        first.stderr()
    );
    // A second host: the round waits for its last call now (30 s), which both say meanwhile.
    let mut second = agent(&endpoint, &[]);
    let two = "round 1 has 2 of max 3 nodes; it closes when 3 have joined or ";
    for agent in [&mut first, &mut second] {
        assert!(
            agent.says_first(&[two], Duration::from_secs(15)).is_some(),
            "{}",
            agent.stderr()
        );
    }
    for agent in [&mut second, &mut first] {
        agent.signal(nix::sys::signal::Signal::SIGTERM);
        assert_eq!(agent.wait(TIMEOUT).code(), Some(143), "{}", agent.stderr());
    }
}

#[test]
fn rendezvous_serve_allow_refuses_agents_outside_its_networks() {
    let mut server = Launch::start(
        &[
            "rendezvous",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "192.0.2.0/24",
        ],
        &[],
    );
    let line = server
        .lines_with("serving the rendezvous on ", 1, TIMEOUT)
        .remove(0);
    let endpoint = line.rsplit(' ').next().expect("an address").to_owned();
    let mut agent = Launch::start(
        &[
            "run",
            "--rdzv",
            &endpoint,
            "--rdzv-timeout",
            "10s",
            "--",
            "true",
        ],
        &[],
    );
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    // Refused at once, told why: its address will not change by trying again.
    let stderr = agent.stderr();
    assert!(
        stderr.contains(&format!(
            "rendezvous at {endpoint} refused Join: PermissionDenied: this host is not in the \
             rendezvous's allowed networks"
        )) && stderr.contains("127.0.0.1 is not in this server's allowed networks (--allow)"),
        "{stderr}"
    );
    assert!(agent.ran_for() < Duration::from_secs(5), "{stderr}");
    server.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(server.wait(TIMEOUT).code(), Some(0), "{}", server.stderr());
    // Each refusal is counted, and logged at most every 10 s.
    assert!(
        server.stderr().contains("outside the allowed networks"),
        "{}",
        server.stderr()
    );
}

#[test]
fn a_second_sigterm_kills_deaf_tasks_at_once() {
    // The task ignores SIGTERM (and so do its sleeps); the grace is long.
    let deaf = "trap '' TERM; echo pid $$; while :; do sleep 0.1; done";
    let mut agent = lone_agent(&["--grace", "60s", "--", "sh", "-c", deaf], &[], &[]);
    let line = agent.lines_with(" pid ", 1, TIMEOUT).remove(0);
    let pid: u32 = line.rsplit(' ').next().unwrap().parse().unwrap();
    agent.signal(nix::sys::signal::Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        super::launch::running(pid),
        "the task ignores the first SIGTERM"
    );
    let second = Instant::now();
    agent.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(143), "{}", agent.stderr());
    assert!(
        second.elapsed() < Duration::from_secs(10),
        "{:?}",
        second.elapsed()
    );
    super::launch::assert_all_gone(&[pid]);
}

/// One agent of a one-host job with 2 local tasks on a fresh port: `tfcluster run --rdzv ...
/// --tasks-per-node 2 FLAGS -- sh -c 'echo gpus $CUDA_VISIBLE_DEVICES'`, with `env` added
/// and the variables `remove` taken out.
fn gpu_agent(flags: &[&str], env: &[(&str, &str)], remove: &[&str]) -> Launch {
    let task = [
        "--",
        "sh",
        "-c",
        "echo gpus \"[${CUDA_VISIBLE_DEVICES-unset}]\"",
    ];
    let args = [&["--tasks-per-node", "2"], flags, &task[..]].concat();
    lone_agent(&args, env, remove)
}

/// The `gpus [...]` line of each local task, by task: its CUDA_VISIBLE_DEVICES in brackets,
/// `[unset]` when it had none.
fn gpus_seen(agent: &mut Launch) -> [String; 2] {
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    let stdout = agent.stdout();
    let of = |task: &str| {
        stdout
            .lines()
            .find_map(|line| {
                Some(
                    line.split_once(&format!("/worker:{task}] gpus "))?
                        .1
                        .to_owned(),
                )
            })
            .unwrap_or_else(|| agent.fail(&format!("no gpus line of worker {task}")))
    };
    [of("0"), of("1")]
}

#[test]
fn each_local_task_gets_its_share_of_the_visible_gpus() {
    let mut agent = gpu_agent(&[], &[("CUDA_VISIBLE_DEVICES", "0,1,2,3")], &[]);
    assert_eq!(gpus_seen(&mut agent), ["[0,1]", "[2,3]"]);

    // As named (UUIDs, MIG ids), as many as asked, the rest unused.
    let mut agent = gpu_agent(
        &["--gpus-per-task", "1"],
        &[("CUDA_VISIBLE_DEVICES", "GPU-5e1d,MIG-7a2b,GPU-9c3d")],
        &[],
    );
    assert_eq!(gpus_seen(&mut agent), ["[GPU-5e1d]", "[MIG-7a2b]"]);

    // --gpus-per-task 0 hides them all.
    let mut agent = gpu_agent(
        &["--gpus-per-task", "0"],
        &[("CUDA_VISIBLE_DEVICES", "0,1")],
        &[],
    );
    assert_eq!(gpus_seen(&mut agent), ["[]", "[]"]);
}

#[test]
fn without_cuda_visible_devices_nvidia_smi_counts_the_gpus() {
    let dir = scratch("nvidia-smi");
    let smi = dir.path().join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\n\
         [ \"$1\" = --list-gpus ] || exit 2\n\
         echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0aa)'\n\
         echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1bb)'\n\
         echo '  MIG 1g.10gb     Device  0: (UUID: MIG-2cc)'\n\
         echo 'GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-3dd)'\n\
         echo 'GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-4ee)'\n",
    )
    .expect("a fake nvidia-smi");
    let mut perms = std::fs::metadata(&smi).expect("written").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&smi, perms).expect("executable");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut agent = gpu_agent(&[], &[("PATH", &path)], &["CUDA_VISIBLE_DEVICES"]);
    assert_eq!(gpus_seen(&mut agent), ["[0,1]", "[2,3]"]);

    // No nvidia-smi and no CUDA_VISIBLE_DEVICES: no GPU, and the tasks' variable stays
    // unset. The PATH holds `sh` only, so not a real nvidia-smi of the host either.
    let bare = dir.path().join("bare");
    std::fs::create_dir_all(&bare).expect("a directory");
    std::os::unix::fs::symlink("/bin/sh", bare.join("sh")).expect("a link to sh");
    let path = bare.to_str().expect("a UTF-8 path");
    let mut agent = gpu_agent(&[], &[("PATH", path)], &["CUDA_VISIBLE_DEVICES"]);
    assert_eq!(gpus_seen(&mut agent), ["[unset]", "[unset]"]);
}

#[test]
fn more_gpus_per_task_than_the_host_has_fails_at_start_naming_the_numbers() {
    let started = Instant::now();
    let mut agent = gpu_agent(
        &["--gpus-per-task", "3"],
        &[("CUDA_VISIBLE_DEVICES", "0,1,2,3")],
        &[],
    );
    let code = agent.wait(TIMEOUT).code();
    let stderr = agent.stderr();
    assert!(matches!(code, Some(1 | 2)), "{code:?}: {stderr}");
    assert!(
        stderr.contains("Requested more GPUs per node than available.")
            && stderr.contains("2 tasks on a node × 3 GPUs per task > 4 GPUs per node")
            && stderr.contains(r#"CUDA_VISIBLE_DEVICES="0,1,2,3""#),
        "{stderr}"
    );
    assert!(
        !agent.stdout().contains("gpus"),
        "no task ran: {}",
        agent.stdout()
    );
    // Before any rendezvous is served or joined.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn dry_run_shows_each_tasks_cuda_visible_devices() {
    let mut agent = lone_agent(
        &["--tasks-per-node", "2", "--dry-run"],
        &[("CUDA_VISIBLE_DEVICES", "4,5,6,7")],
        &[],
    );
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    let stdout = agent.stdout();
    assert!(
        stdout.contains("/worker:0] CUDA_VISIBLE_DEVICES=4,5\n")
            && stdout.contains("/worker:1] CUDA_VISIBLE_DEVICES=6,7\n"),
        "{stdout}"
    );
}

#[test]
fn sigterm_stops_an_agent_waiting_alone_at_once() {
    // A 2-host job whose second host never comes: the agent waits for round 1, in a call the
    // rendezvous holds for up to 10 s. SIGTERM ends the wait at once (a quiet run: tens of
    // ms), not when the held call returns.
    let mut agent = lone_agent(&["--nodes", "2", "--", "true"], &[], &[]);
    let waiting = agent.says_first(&["tfcluster: waiting at "], TIMEOUT);
    assert!(waiting.is_some(), "{}", agent.stderr());
    let sent = Instant::now();
    agent.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(143), "{}", agent.stderr());
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}: {}",
        sent.elapsed(),
        agent.stderr()
    );
}

#[test]
fn a_job_whose_smallest_round_cannot_start_is_refused_at_the_join() {
    // 64 hosts × 256 tasks, this host's name 182 bytes long: no TF_CONFIG of that round fits
    // Linux's 128 KiB per environment variable, whatever the other hosts are called.
    let host = ["a".repeat(60), "b".repeat(60), "c".repeat(60)].join(".");
    let mut agent = lone_agent(
        &[
            "--nodes",
            "64",
            "--tasks-per-node",
            "256",
            "--host",
            &host,
            "--",
            "true",
        ],
        &[],
        &[],
    );
    let status = agent.wait(TIMEOUT);
    let stderr = agent.stderr();
    assert_ne!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the smallest round of this job (64 nodes × 256 tasks")
            && stderr.contains("past Linux's limit of 131072 bytes"),
        "{stderr}"
    );
}

/// A task that exits 42 at once, with no notice anywhere: each exit a planned restart, the
/// third in a row without progress a loop counted as a failure, the next the same failure
/// again, a crash loop: the job stops in round 4 (it used to restart thousands of rounds a
/// minute, for ever).
#[test]
fn a_task_that_exits_42_at_once_is_a_loop_that_stops_the_job() {
    let (mut agent, _) = serving(|endpoint, log| {
        Launch::start(
            &[
                "run", "--rdzv", endpoint, "--nodes", "1", "--", "sh", "-c", "exit 42",
            ],
            &[log],
        )
    });
    let status = agent.wait(TIMEOUT);
    let stderr = agent.stderr();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the job failed in round 4: a crash loop: \"exited with status 42\"")
            && stderr.contains("a planned exit, 3 or more in a row without progress"),
        "{stderr}"
    );
}
