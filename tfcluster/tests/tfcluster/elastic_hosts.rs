//! `tfcluster run --rdzv` across hosts: one agent per host, each host a network namespace
//! ([`net_hosts`]), real TensorFlow 2.21 training with MultiWorkerMirroredStrategy
//! (`scripts/elastic_train.py`, which checkpoints to a directory every host shares) or
//! ParameterServerStrategy (`scripts/pss_train.py`). Host 0's agent serves the rendezvous on
//! its address and the default port. The failures are real: a task SIGKILLed, a host's link
//! set down, a host added, a script that always fails.
//!
//! The jobs run one at a time (each is up to eight TensorFlow processes on a two-core
//! machine). Every job's processes and namespaces are gone when its test ends: a job that
//! succeeded must leave no process in any host, and dropping a [`Job`] kills what is left.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::launch::Launch;

/// The hosts' addresses: 192.0.2.128 onwards (apart from the other tests' networks, though
/// each set of hosts is a network of its own anyway).
const FIRST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 128);
/// A job's longest wait: TensorFlow imports and trains on a loaded two-core machine.
const JOB_TIMEOUT: Duration = Duration::from_secs(300);
/// Every agent starts its tasks again within this long of a failure (the grace is 5 s).
const RESTART_WITHIN: Duration = Duration::from_secs(30);

/// Held by the job running; the others wait their turn.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// An elastic job across `net_hosts` hosts: an agent per host started so far.
struct Job {
    // Dropped first: SIGTERM to each agent still running, which stops its tasks.
    agents: Vec<Option<Launch>>,
    // Then every process left in a host is killed and the namespaces removed.
    hosts: net_hosts::Hosts,
    dir: PathBuf,
    flags: Vec<String>,
    command: Vec<String>,
    env: Vec<(String, String)>,
    _turn: MutexGuard<'static, ()>,
}

impl Job {
    /// A job of `count` hosts, none started; each agent will run `command` with `flags` and
    /// `env` (and `CKPT_DIR`, a checkpoint directory every host shares).
    fn new(
        test: &str,
        count: usize,
        flags: &[&str],
        command: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let dir =
            std::env::temp_dir().join(format!("tfcluster-hosts-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("ckpt")).expect("a scratch directory");
        let ckpt = dir.join("ckpt").to_str().expect("a UTF-8 path").to_owned();
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.push(("CKPT_DIR".to_owned(), ckpt));
        Self {
            agents: (0..count).map(|_| None).collect(),
            hosts: net_hosts::Hosts::create(count, FIRST),
            dir,
            flags: owned(flags),
            command: owned(command),
            env,
            _turn: turn,
        }
    }

    /// Starts host `h`'s agent, which joins the rendezvous on host 0 (and serves it, on
    /// host 0).
    fn start(&mut self, h: usize) {
        let rdzv = self.hosts.address(0).to_string();
        let error_file = self.error_file(h);
        let mut args = vec!["run", "--rdzv", &rdzv, "--error-file", &error_file];
        args.extend(self.flags.iter().map(String::as_str));
        args.push("--");
        args.extend(self.command.iter().map(String::as_str));
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let command = self.hosts.command(h, env!("CARGO_BIN_EXE_tfcluster"));
        self.agents[h] = Some(Launch::start_by(command, &args, &env, &[]));
    }

    /// Starts the agents of hosts `0..count`, host 0's first so that it serves the
    /// rendezvous before the others ask for it (they retry anyway).
    fn start_all(&mut self, count: usize) {
        self.start(0);
        std::thread::sleep(Duration::from_millis(300));
        for h in 1..count {
            self.start(h);
        }
    }

    fn error_file(&self, h: usize) -> String {
        format!("{}/host{h}.json", self.dir.display())
    }

    fn agent(&mut self, h: usize) -> &mut Launch {
        self.agents[h].as_mut().expect("started")
    }

    /// Every started agent's stdout, host by host.
    fn stdout(&self) -> String {
        self.agents.iter().flatten().map(Launch::stdout).collect()
    }

    /// Every started agent's stderr, host by host, headed by the host.
    fn stderr(&self) -> String {
        self.agents
            .iter()
            .enumerate()
            .filter_map(|(h, a)| Some(format!("--- host {h} ---\n{}", a.as_ref()?.stderr())))
            .collect()
    }

    /// The text after `] WORD ` of every output line with that word, with the `host/job:index`
    /// in front of it.
    fn lines(&self, word: &str) -> Vec<(String, String)> {
        let needle = format!("] {word} ");
        self.stdout()
            .lines()
            .filter_map(|line| {
                let (task, rest) = line.split_once(&needle)?;
                Some((task.trim_start_matches('[').to_owned(), rest.to_owned()))
            })
            .collect()
    }

    /// Waits until `ready` holds of the agents' output; panics with their output if it does
    /// not within `timeout`.
    fn wait_for(&self, what: &str, timeout: Duration, ready: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !ready(self) {
            assert!(
                started.elapsed() < timeout,
                "{what}: not within {timeout:?}\n--- stdout ---\n{}\n{}",
                self.stdout(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the chief has checkpointed at least once in round 1 (mid-training).
    fn wait_for_a_checkpoint(&self) {
        self.wait_for("a checkpoint in round 1", JOB_TIMEOUT, |job| {
            job.lines("checkpointed")
                .iter()
                .any(|(_, rest)| rest.ends_with(" round=1"))
        });
    }

    /// Waits for the agents of `hosts` and asserts their exit codes.
    fn expect_exits(&mut self, hosts: &[usize], expected: i32) {
        let mut codes = Vec::new();
        for &h in hosts {
            codes.push(self.agent(h).wait(JOB_TIMEOUT).code().unwrap_or(-1));
        }
        assert_eq!(
            codes,
            vec![expected; hosts.len()],
            "exit codes of hosts {hosts:?}\n--- stdout ---\n{}\n{}",
            self.stdout(),
            self.stderr()
        );
    }

    /// After the job: no process is left in any host.
    fn assert_nothing_left(&self) {
        for h in 0..self.hosts.count() {
            let left = self.hosts.processes(h);
            let running: Vec<_> = left
                .iter()
                .filter(|p| net_hosts::running(p.as_raw().unsigned_abs()))
                .collect();
            assert!(running.is_empty(), "host {h} still runs {running:?}");
        }
    }

    /// The pid of the running task `job:index` (from its `pid` line, the latest one).
    fn pid_of(&self, task: &str) -> Pid {
        let suffix = format!("/{task}");
        let (_, pid) = self
            .lines("pid")
            .into_iter()
            .rev()
            .find(|(t, _)| t.ends_with(&suffix))
            .unwrap_or_else(|| panic!("no pid line of {task}:\n{}", self.stdout()));
        Pid::from_raw(pid.trim().parse().expect("a pid"))
    }
}

/// The flags every job here shares: `--tasks-per-node 2`, a short last call and grace.
fn flags<'a>(nodes: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let common = [
        "--nodes",
        nodes,
        "--tasks-per-node",
        "2",
        "--rdzv-last-call",
        "2s",
        "--grace",
        "5s",
    ];
    [&common[..], more].concat()
}

/// A field `name=VALUE` of a `done` or `cluster` line.
fn field(line: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(&prefix))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

/// The `done` lines: one per task that finished training, with its workers, round, restart
/// count and restored step.
fn done(job: &Job) -> Vec<(String, u64, u64, u64, u64)> {
    job.lines("done")
        .into_iter()
        .map(|(task, rest)| {
            (
                task,
                field(&rest, "workers"),
                field(&rest, "round"),
                field(&rest, "restarts"),
                field(&rest, "restored"),
            )
        })
        .collect()
}

#[test]
fn mirrored_training_on_three_hosts_sees_one_cluster_of_six() {
    let script = super::tf_script("elastic_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let env = [
        ("EXPECT_RESTART_COUNT", "0"),
        ("EXPECT_WORKERS", "6"),
        ("STEP_SECONDS", "0"),
    ];
    let mut job = Job::new("mwms", 3, &flags("3", &[]), &command, &env);
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 0);
    let clusters = job.lines("cluster");
    assert_eq!(clusters.len(), 6, "{clusters:?}");
    let digest = clusters[0].1.split_whitespace().next().unwrap().to_owned();
    let mut hosts_seen = std::collections::BTreeSet::new();
    for (task, rest) in &clusters {
        assert!(
            rest.starts_with(&format!("{digest} workers=6 round=1 restarts=0")),
            "{task}: {rest}"
        );
        hosts_seen.insert(task.split('/').next().unwrap().to_owned());
    }
    let expected: std::collections::BTreeSet<String> =
        (0..3).map(|h| job.hosts.address(h).to_string()).collect();
    assert_eq!(hosts_seen, expected, "two tasks on each host");
    assert_eq!(done(&job).len(), 6, "{}", job.stdout());
    job.assert_nothing_left();
}

#[test]
fn a_task_killed_mid_training_restarts_every_host_from_the_last_checkpoint() {
    let script = super::tf_script("elastic_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let env = [("EXPECT_RESTART_COUNT", "1"), ("EXPECT_WORKERS", "6")];
    let mut job = Job::new("kill", 3, &flags("3", &[]), &command, &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    let victim = job.pid_of("worker:3");
    let killed = Instant::now();
    kill(victim, Signal::SIGKILL).expect("the task runs");
    // Every task of the next round started (its `pid` line, printed before TensorFlow's
    // import): six of round 1, six of round 2.
    job.wait_for("every task started again", RESTART_WITHIN, |job| {
        job.lines("pid").len() >= 12
    });
    let restarted_in = killed.elapsed();
    job.expect_exits(&[0, 1, 2], 0);
    let done = done(&job);
    assert_eq!(done.len(), 6, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (6, 2, 1), "{task}");
        assert!(*restored >= 10, "{task} restored step {restored}");
    }
    eprintln!(
        "a task killed: every task started again in {restarted_in:?}\n{}",
        job.stderr()
    );
    job.assert_nothing_left();
}

#[test]
fn a_host_lost_mid_training_leaves_two_that_finish_as_four_tasks() {
    let script = super::tf_script("elastic_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let env = [("EXPECT_RESTART_COUNT", "1")];
    let mut job = Job::new(
        "lost",
        3,
        &flags("2:3", &["--rdzv-timeout", "5s"]),
        &command,
        &env,
    );
    job.start_all(3);
    job.wait_for_a_checkpoint();
    // Host 2 vanishes from the network: its packets are dropped, nothing answers for it.
    job.hosts.link(2, false);
    job.expect_exits(&[0, 1], 0);
    let done = done(&job);
    assert_eq!(done.len(), 4, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *restarts), (4, 1), "{task}");
        assert!(
            *round >= 2 && *restored >= 10,
            "{task}: round {round}, restored {restored}"
        );
        assert!(
            !task.starts_with(&job.hosts.address(2).to_string()),
            "the lost host took no part: {task}"
        );
    }
    // The lost host's agent, cut off from the rendezvous, stops its tasks and gives up.
    job.expect_exits(&[2], 1);
    let stderr = job.agent(2).stderr();
    assert!(stderr.contains("rendezvous at "), "{stderr}");
    job.assert_nothing_left();
}

#[test]
fn a_fourth_host_joining_mid_training_makes_the_next_round_eight_tasks() {
    let script = super::tf_script("elastic_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    // A host joining is no failure: the restart count stays 0 (torchrun's rule too).
    let env = [("EXPECT_RESTART_COUNT", "0")];
    let mut job = Job::new("grow", 4, &flags("2:4", &[]), &command, &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    job.start(3);
    job.expect_exits(&[0, 1, 2, 3], 0);
    let done = done(&job);
    assert_eq!(done.len(), 8, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (8, 2, 0), "{task}");
        assert!(*restored >= 10, "{task} restored step {restored}");
    }
    job.assert_nothing_left();
}

#[test]
fn a_script_that_always_fails_stops_every_host_after_max_restarts() {
    // Fails a second after its start (so that every task of the round has started before
    // the first failure stops the others), saying why on stderr: no TensorFlow needed.
    let command = [
        "sh",
        "-c",
        "echo start $TFCLUSTER_ROUND; sleep 1; \
         echo \"no data for task $TFCLUSTER_LOCAL_TASK\" >&2; exit 7",
    ];
    let mut job = Job::new(
        "fail",
        3,
        &flags("3", &["--max-restarts", "1"]),
        &command,
        &[],
    );
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 1);
    let mut starts: Vec<String> = job.lines("start").into_iter().map(|(_, r)| r).collect();
    starts.sort();
    assert_eq!(
        starts,
        [["1"; 6], ["2"; 6]].concat(),
        "two attempts of six tasks:\n{}",
        job.stdout()
    );
    for h in 0..3 {
        let stderr = job.agent(h).stderr();
        assert!(
            stderr.contains("the job failed in round 2"),
            "host {h}: {stderr}"
        );
        assert!(
            stderr.contains("first failure: task "),
            "host {h}: {stderr}"
        );
        assert!(
            stderr.contains(") exited with status 7 in round 1"),
            "host {h}: {stderr}"
        );
        assert!(
            stderr.contains("on 192.0.2.1"),
            "the host is named: {stderr}"
        );
        assert!(
            stderr.contains("its stderr ended with:\nno data for task "),
            "host {h}: {stderr}"
        );
        let record = std::fs::read_to_string(job.error_file(h)).expect("the error file");
        let record: serde_json::Value = serde_json::from_str(&record).expect("JSON");
        assert_eq!(record["first_failure"]["status"], "exited with status 7");
        assert_eq!(record["first_failure"]["round"], 1);
    }
    job.assert_nothing_left();
}

#[test]
fn parameter_server_training_on_three_hosts() {
    let script = super::tf_script("pss_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let mut job = Job::new(
        "pss",
        3,
        &flags("3", &["--layout", "chief=1,ps=1"]),
        &command,
        &[],
    );
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 0);
    let stdout = job.stdout();
    let chief = format!(
        "[{}/chief:0] pss ok chief:0 workers=4 ps=1",
        job.hosts.address(0)
    );
    assert!(stdout.contains(&chief), "{stdout}");
    let digests: std::collections::BTreeSet<String> = job
        .lines("cluster")
        .into_iter()
        .map(|(_, digest)| digest)
        .collect();
    assert_eq!(digests.len(), 1, "every task saw one cluster:\n{stdout}");
    job.assert_nothing_left();
}
