//! [`Job`]: an elastic job across hosts for the tests of `tfcluster run --rdzv` (one agent
//! per host, each host a network namespace of [`net_hosts`]), whichever rendezvous it uses:
//! the built-in one, which host 0's agent serves, an etcd cluster with members in some of
//! the hosts ([`Job::etcd_in`]), or any other a test names ([`Job::rendezvous`]). Its helpers
//! read the lines `scripts/elastic_train.py` prints.
//!
//! The jobs run one at a time (each is up to eight TensorFlow processes on a two-core
//! machine). Every job's processes and namespaces are gone when its test ends: a job that
//! succeeded must leave no process in any host, and dropping a [`Job`] kills what is left.

use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use etcd_cluster::EtcdCluster;
use nix::unistd::Pid;
use tempfile::TempDir;

use super::launch::Launch;

/// The hosts' addresses: 192.0.2.128 onwards (apart from the other tests' networks, though
/// each set of hosts is a network of its own anyway).
const FIRST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 128);
/// Host `i`'s address in a job, known before the job is made (for the environment or flags
/// that name one host).
pub(super) fn job_address(i: u8) -> Ipv4Addr {
    let [a, b, c, d] = FIRST.octets();
    Ipv4Addr::new(a, b, c, d + i)
}

/// A job's longest wait: TensorFlow imports and trains on a loaded two-core machine.
pub(super) const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// Held by the job running; the others wait their turn.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// An elastic job across `net_hosts` hosts: an agent per host started so far.
pub(super) struct Job {
    // Dropped first: SIGTERM to each agent still running, which stops its tasks.
    agents: Vec<Option<Launch>>,
    // Then the etcd cluster the rendezvous is in, if any, is killed and removed,
    etcd: Option<EtcdCluster>,
    // and every process left in a host is killed and the namespaces removed.
    hosts: net_hosts::Hosts,
    /// `--rdzv`'s value; `None`: host 0's address (the built-in rendezvous, which host 0's
    /// agent serves).
    rdzv: Option<String>,
    // The hosts' shared directory (checkpoints, error files), removed once they are gone.
    dir: TempDir,
    flags: Vec<String>,
    command: Vec<String>,
    env: Vec<(String, String)>,
    _turn: MutexGuard<'static, ()>,
}

impl Job {
    /// A job of `count` hosts, none started; each agent will run `command` with `flags` and
    /// `env` (and `CKPT_DIR`, a checkpoint directory every host shares).
    pub(super) fn new(
        test: &str,
        count: usize,
        flags: &[&str],
        command: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let dir = super::scratch(&format!("hosts-{test}"));
        let ckpt = dir.path().join("ckpt");
        std::fs::create_dir(&ckpt).expect("a checkpoint directory");
        let ckpt = ckpt.to_str().expect("a UTF-8 path").to_owned();
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.push(("CKPT_DIR".to_owned(), ckpt));
        Self {
            agents: (0..count).map(|_| None).collect(),
            etcd: None,
            hosts: net_hosts::Hosts::create(count, FIRST),
            rdzv: None,
            dir,
            flags: owned(flags),
            command: owned(command),
            env,
            _turn: turn,
        }
    }

    /// A job of `count` hosts training with `scripts/elastic_train.py` (real TensorFlow),
    /// as [`new`](Self::new).
    pub(super) fn training(test: &str, count: usize, flags: &[&str], env: &[(&str, &str)]) -> Self {
        let script = super::tf_script("elastic_train.py");
        let command: Vec<&str> = script.iter().map(String::as_str).collect();
        Self::new(test, count, flags, &command, env)
    }

    /// The directory every host shares as `CKPT_DIR`.
    pub(super) fn shared_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("ckpt")
    }

    /// The job's hosts.
    pub(super) fn hosts(&self) -> &net_hosts::Hosts {
        &self.hosts
    }

    /// Makes the agents started from now on join the rendezvous `rdzv` (`--rdzv`'s value)
    /// rather than the built-in one on host 0.
    pub(super) fn rendezvous(&mut self, rdzv: impl Into<String>) {
        self.rdzv = Some(rdzv.into());
    }

    /// Keeps the job's rendezvous in an etcd cluster started now, member `k` in host `on[k]`
    /// (on etcd's ports): the agents started from now on join it with `--rdzv etcd://…`
    /// naming every member.
    pub(super) fn etcd_in(&mut self, on: &[usize]) -> &mut EtcdCluster {
        let etcd = EtcdCluster::start_in_hosts(&self.hosts, on);
        self.rdzv = Some(etcd_rdzv(&etcd));
        self.etcd.insert(etcd)
    }

    /// As [`etcd_in`](Self::etcd_in), the cluster serving over TLS with client certificates
    /// required; the agents started from now on pass its CA and client certificate
    /// (`--rdzv-tls-*`).
    pub(super) fn etcd_in_tls(&mut self, on: &[usize]) -> &mut EtcdCluster {
        let (etcd, tls) = EtcdCluster::start_in_hosts_tls(&self.hosts, on);
        self.rdzv = Some(etcd_rdzv(&etcd));
        let tls = super::rdzv_tls_flags(&tls.ca, &tls.client_cert, &tls.client_key);
        self.add_flags(&tls);
        self.etcd.insert(etcd)
    }

    /// Adds `flags` to those of the agents started from now on.
    pub(super) fn add_flags(&mut self, flags: &[impl AsRef<str>]) {
        self.flags
            .extend(flags.iter().map(|f| f.as_ref().to_owned()));
    }

    /// The etcd cluster of [`etcd_in`](Self::etcd_in).
    pub(super) fn etcd(&mut self) -> &mut EtcdCluster {
        self.etcd.as_mut().expect("the job's rendezvous is in etcd")
    }

    /// Starts host `h`'s agent, which joins the job's rendezvous (by default the built-in one
    /// on host 0, which host 0's agent serves).
    pub(super) fn start(&mut self, h: usize) {
        self.start_with(h, &[]);
    }

    /// As [`start`](Self::start), with `env` set in host `h`'s agent over the job's.
    pub(super) fn start_with(&mut self, h: usize, env: &[(&str, &str)]) {
        let rdzv = match &self.rdzv {
            Some(rdzv) => rdzv.clone(),
            None => self.hosts.address(0).to_string(),
        };
        let error_file = self.error_file(h);
        let mut args = vec!["run", "--rdzv", &rdzv, "--error-file", &error_file];
        args.extend(self.flags.iter().map(String::as_str));
        args.push("--");
        args.extend(self.command.iter().map(String::as_str));
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(env.iter().copied())
            .collect();
        let command = self.hosts.command(h, env!("CARGO_BIN_EXE_tfcluster"));
        self.agents[h] = Some(Launch::start_by(command, &args, &env, &[]));
    }

    /// Starts the agents of hosts `0..count`, host 0's first so that it serves the
    /// rendezvous before the others ask for it (they retry anyway).
    pub(super) fn start_all(&mut self, count: usize) {
        self.start(0);
        std::thread::sleep(Duration::from_millis(300));
        for h in 1..count {
            self.start(h);
        }
    }

    pub(super) fn error_file(&self, h: usize) -> String {
        format!("{}/host{h}.json", self.dir.path().display())
    }

    pub(super) fn agent(&mut self, h: usize) -> &mut Launch {
        self.agents[h].as_mut().expect("started")
    }

    /// Every started agent's stdout, host by host.
    pub(super) fn stdout(&self) -> String {
        self.agents.iter().flatten().map(Launch::stdout).collect()
    }

    /// Every started agent's stderr, host by host, headed by the host.
    pub(super) fn stderr(&self) -> String {
        self.agents
            .iter()
            .enumerate()
            .filter_map(|(h, a)| Some(format!("--- host {h} ---\n{}", a.as_ref()?.stderr())))
            .collect()
    }

    /// The text after `] WORD ` of every output line with that word, with the `host/job:index`
    /// in front of it.
    pub(super) fn lines(&self, word: &str) -> Vec<(String, String)> {
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
    pub(super) fn wait_for(&self, what: &str, timeout: Duration, ready: impl Fn(&Self) -> bool) {
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
    pub(super) fn wait_for_a_checkpoint(&self) {
        self.wait_for("a checkpoint in round 1", JOB_TIMEOUT, |job| {
            job.lines("checkpointed")
                .iter()
                .any(|(_, rest)| rest.ends_with(" round=1"))
        });
    }

    /// Waits for the agents of `hosts` and asserts their exit codes.
    pub(super) fn expect_exits(&mut self, hosts: &[usize], expected: i32) {
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

    /// After the job: no process of the job is left in any host (the etcd members of
    /// [`etcd_in`](Self::etcd_in) run on; they are the rendezvous, not the job).
    pub(super) fn assert_nothing_left(&self) {
        // A process the agents killed as they left (a spare warm interpreter holds half a
        // gigabyte) takes a moment to be torn down: give it that moment, no more.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = self.left_running();
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "still running: {left:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What still runs in the job's hosts but its etcd members: `host H: PID: COMMAND LINE`.
    fn left_running(&self) -> Vec<String> {
        let mut left = Vec::new();
        for h in 0..self.hosts.count() {
            for p in self.hosts.processes(h) {
                if !net_hosts::running(p.as_raw().unsigned_abs())
                    || (self.etcd.is_some() && is_etcd(p))
                {
                    continue;
                }
                let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                left.push(format!("host {h}: {p}: {cmdline}"));
            }
        }
        left
    }

    /// The pid of the running task `job:index` (from its `pid` line, the latest one).
    pub(super) fn pid_of(&self, task: &str) -> Pid {
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

/// `--rdzv`'s value for the members of `etcd`: `etcd://HOST:PORT,...`.
pub(super) fn etcd_rdzv(etcd: &EtcdCluster) -> String {
    let members: Vec<String> = etcd
        .endpoints()
        .iter()
        .map(|url| {
            url.split_once("://")
                .map_or(url.as_str(), |(_, a)| a)
                .to_owned()
        })
        .collect();
    format!("etcd://{}", members.join(","))
}

/// Whether process `pid` is an etcd server.
fn is_etcd(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "etcd")
}

/// A field `name=VALUE` of a `done` or `cluster` line.
pub(super) fn field(line: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(&prefix))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

/// The `done` lines: one per task that finished training, with its workers, round, restart
/// count and restored step.
pub(super) fn done(job: &Job) -> Vec<(String, u64, u64, u64, u64)> {
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
