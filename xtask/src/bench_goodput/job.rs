//! One side's training job on three network-namespace hosts: an agent per host (`tfcluster
//! -v run --rdzv`, release build, host 0's agent serving the built-in rendezvous on its
//! address), each agent's stdout (the tasks' marks) and stderr (its log) in files of their
//! own, one pair per start. Dropped: the agents killed, then every process left in a host
//! and the hosts themselves removed.

use std::fs::{self, File};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::interrupt;
use super::marks::{self, Mark, What};
use super::side::{COMMON, Flags, Side};
use crate::child::{Running, release};

/// How many hosts a job has.
pub(super) const HOSTS: usize = 3;
/// The hosts' addresses: 192.0.2.200 onwards (apart from the tests' and Slurm's; each set of
/// hosts is a network of its own anyway).
const FIRST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 200);
/// The script every task runs.
const SCRIPT: &str = "xtask/src/bench_goodput/goodput_train.py";
/// What an agent logs when a warm interpreter has done its imports (`launcher::prewarm`).
const WARM_READY: &str = "warm interpreter ready";

/// A side's job; see the module docs.
pub(super) struct Job {
    // Dropped first: each agent killed (SIGKILL) and reaped;
    agents: Vec<Option<Running>>,
    // then every process left in a host (the tasks) killed and the namespaces removed.
    hosts: net_hosts::Hosts,
    dir: PathBuf,
    /// How many times each host's agent was started (its output files are numbered so).
    starts: Vec<usize>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Each host's own variables besides `env` (its cloud's metadata server, as a VM has).
    host_env: Vec<Vec<(String, String)>>,
}

impl Job {
    /// `side`'s job (as `flags` says its flags are), its files under `dir` (made anew), its
    /// tasks running `python` on the training script; no agent started.
    pub(super) fn new(
        side: Side,
        flags: &Flags,
        python: &Path,
        dir: PathBuf,
    ) -> Result<Self, String> {
        let flags: Vec<&str> = COMMON.iter().chain(&side.flags(flags)).copied().collect();
        let script = crate::workspace::root().join(SCRIPT).display().to_string();
        let command = [python.display().to_string(), script];
        Self::running(side.slug(), &flags, &command, dir)
    }

    /// A job of id `rdzv_id` whose agents run with `flags` (beside `--rdzv`, host 0's
    /// address) and whose tasks run `command` with `CKPT_DIR`, its files under `dir` (made
    /// anew); no agent started.
    pub(super) fn running(
        rdzv_id: &str,
        flags: &[&str],
        command: &[String],
        dir: PathBuf,
    ) -> Result<Self, String> {
        let _ = fs::remove_dir_all(&dir);
        let ckpt = dir.join("ckpt");
        fs::create_dir_all(&ckpt).map_err(|e| format!("cannot make {}: {e}", ckpt.display()))?;
        // net-hosts panics on a failed step, having removed what it made.
        let hosts =
            std::panic::catch_unwind(|| net_hosts::Hosts::create(HOSTS, FIRST)).map_err(|_| {
                "cannot make the network-namespace hosts (root and iproute2 needed; \
                 the panic above says why)"
                    .to_owned()
            })?;
        let rdzv = hosts.address(0).to_string();
        let mut args: Vec<String> = ["-v", "run", "--rdzv", &rdzv, "--rdzv-id", rdzv_id]
            .iter()
            .chain(flags)
            .map(|s| (*s).to_owned())
            .collect();
        args.push("--".into());
        args.extend(command.iter().cloned());
        let env = vec![
            ("CKPT_DIR".to_owned(), ckpt.display().to_string()),
            // Plain log lines, to read; TensorFlow's own chatter kept to errors.
            ("NO_COLOR".to_owned(), "1".to_owned()),
            ("TF_CPP_MIN_LOG_LEVEL".to_owned(), "2".to_owned()),
        ];
        Ok(Self {
            agents: (0..HOSTS).map(|_| None).collect(),
            hosts,
            dir,
            starts: vec![0; HOSTS],
            args,
            env,
            host_env: vec![Vec::new(); HOSTS],
        })
    }

    /// Sets variable `key` to `value` for host `h`'s agents started from now on.
    pub(super) fn set_env(&mut self, h: usize, key: &str, value: &str) {
        self.host_env[h].retain(|(k, _)| k != key);
        self.host_env[h].push((key.to_owned(), value.to_owned()));
    }

    /// Waits up to `timeout` for every agent to exit; whether they all did.
    pub(super) fn wait_all(&mut self, timeout: Duration) -> Result<bool, String> {
        let deadline = Instant::now() + timeout;
        loop {
            interrupt::check()?;
            let mut running = 0;
            for agent in self.agents.iter_mut().flatten() {
                if matches!(agent.0.try_wait(), Ok(None)) {
                    running += 1;
                }
            }
            if running == 0 {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(super) fn hosts(&self) -> &net_hosts::Hosts {
        &self.hosts
    }

    /// The command line every agent runs, for the report (a script by its file's name).
    pub(super) fn command_line(&self) -> String {
        let mut parts = self.args.split(|a| a == "--");
        let flags = parts.next().unwrap_or_default();
        let command: Vec<String> = parts
            .next()
            .unwrap_or_default()
            .iter()
            .map(|a| match a.rsplit_once('/') {
                Some((_, name)) if a.ends_with(".py") || a.contains("python") => name.to_owned(),
                _ => a.clone(),
            })
            .collect();
        format!("tfcluster {} -- {}", flags.join(" "), command.join(" "))
    }

    /// Starts every host's agent, host 0's first so that it serves the rendezvous before the
    /// others ask (they retry anyway).
    pub(super) fn start_all(&mut self) -> Result<(), String> {
        self.start(0)?;
        interrupt::sleep(Duration::from_millis(300))?;
        (1..HOSTS).try_for_each(|h| self.start(h))
    }

    /// Starts (or starts again) host `h`'s agent, its output to files of its own.
    pub(super) fn start(&mut self, h: usize) -> Result<(), String> {
        self.starts[h] += 1;
        let (out, err) = self.output_files(h, self.starts[h]);
        let create = |path: &Path| {
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
        };
        let mut command = self.hosts.command(h, release("tfcluster"));
        command
            .args(&self.args)
            .envs(
                self.env
                    .iter()
                    .chain(&self.host_env[h])
                    .map(|(k, v)| (k, v)),
            )
            .stdin(Stdio::null())
            .stdout(create(&out)?)
            .stderr(create(&err)?);
        let child = interrupt::spawn(&mut command)
            .map_err(|e| format!("cannot start host {h}'s agent ({command:?}): {e}"))?;
        self.agents[h] = Some(Running(child));
        Ok(())
    }

    fn output_files(&self, h: usize, start: usize) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!("host{h}-{start}.out")),
            self.dir.join(format!("host{h}-{start}.log")),
        )
    }

    /// Every output file of host `h`'s agents so far, stdout's or the log's, concatenated.
    fn read(&self, h: usize, log: bool) -> String {
        (1..=self.starts[h])
            .map(|start| {
                let (out, err) = self.output_files(h, start);
                fs::read_to_string(if log { err } else { out }).unwrap_or_default()
            })
            .collect()
    }

    /// Host `h`'s agents' logs so far.
    pub(super) fn log(&self, h: usize) -> String {
        self.read(h, true)
    }

    /// Every mark the tasks printed so far, host by host.
    pub(super) fn marks(&self) -> Vec<Mark> {
        (0..HOSTS)
            .flat_map(|h| marks::parse_all(&self.read(h, false)))
            .collect()
    }

    /// Waits up to `timeout` until every running agent holds a warm interpreter, its
    /// imports done, for its task's next round (`warm interpreter ready` logged once more
    /// than its task has started: each start takes one); whether they all did.
    pub(super) fn wait_spares(&self, timeout: Duration) -> Result<bool, String> {
        let deadline = Instant::now() + timeout;
        loop {
            interrupt::check()?;
            if (0..HOSTS).all(|h| self.spare_ready(h)) {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether host `h`'s agent, if it runs, has a ready interpreter its task has not taken.
    fn spare_ready(&self, h: usize) -> bool {
        if self.agents[h].is_none() {
            return true;
        }
        let (out, log) = self.output_files(h, self.starts[h]);
        let read = |path: &Path| fs::read_to_string(path).unwrap_or_default();
        holds_spare(&read(&out), &read(&log))
    }

    /// The pid of host `h`'s running agent.
    pub(super) fn agent_pid(&self, h: usize) -> Option<u32> {
        self.agents[h].as_ref().map(|a| a.0.id())
    }

    /// Kills host `h`'s agent and every task in the host at once (the host loses its power),
    /// and reaps the agent.
    pub(super) fn kill_host(&mut self, h: usize) {
        self.hosts.kill_all(h);
        self.agents[h] = None;
    }

    /// Waits until the newest round with steps has `hosts` tasks and its chief has made
    /// `steps` steps since its restore (training is steady); returns that round. An error
    /// after `timeout`, naming the last lines of each agent's log.
    pub(super) fn wait_steady(
        &self,
        hosts: usize,
        steps: u64,
        timeout: Duration,
    ) -> Result<u32, String> {
        let deadline = Instant::now() + timeout;
        loop {
            interrupt::check()?;
            if let Some(round) = steady(&self.marks(), hosts, steps) {
                return Ok(round);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "training with {hosts} tasks did not reach {steps} steps in a round within {timeout:?} (files in {}){}",
                    self.dir.display(),
                    self.tails()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of each agent's log, for an error.
    fn tails(&self) -> String {
        (0..HOSTS)
            .map(|h| {
                let log = self.log(h);
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(6)..].join("\n");
                format!("\n--- host {h}'s agent ---\n{tail}")
            })
            .collect()
    }
}

/// Whether an agent whose tasks printed `out` and which logged `log` holds a ready warm
/// interpreter that no task has taken: one more ready than tasks started.
fn holds_spare(out: &str, log: &str) -> bool {
    let started = marks::parse_all(out)
        .iter()
        .filter(|m| m.what == What::Start)
        .count();
    log.matches(WARM_READY).count() > started
}

/// The newest round whose steps have begun, when it has `hosts` tasks and its chief has made
/// `steps` steps since its restore.
fn steady(marks: &[Mark], hosts: usize, steps: u64) -> Option<u32> {
    let round = marks
        .iter()
        .filter(|m| m.what == What::Step)
        .map(|m| m.round)
        .max()?;
    let tasks = marks
        .iter()
        .filter(|m| m.round == round && m.what == What::Start)
        .count();
    let of_chief = |what: What| {
        marks
            .iter()
            .filter(|m| m.round == round && m.what == what && m.is_chief())
            .map(|m| m.value)
            .max()
    };
    let made = of_chief(What::Step)?.checked_sub(of_chief(What::Restored)?)?;
    (tasks == hosts && made >= steps).then_some(round)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_is_an_interpreter_ready_beyond_those_the_tasks_took() {
        let ready = "2026-12-02T11:00:00.000Z  INFO launcher::prewarm::warm: warm interpreter ready local_task=0 import_ms=8640\n";
        let start = |round: u32| format!("[h/worker:1] goodput {round} start 1.0 42\n");
        // The first interpreter, before the first round.
        assert!(holds_spare("", ready));
        // Handed to round 1: the next one still imports.
        assert!(!holds_spare(&start(1), ready));
        assert!(holds_spare(&start(1), &ready.repeat(2)));
        // Round 2 took that one; the next one still imports.
        assert!(!holds_spare(&(start(1) + &start(2)), &ready.repeat(2)));
        assert!(holds_spare(&(start(1) + &start(2)), &ready.repeat(3)));
    }
}
