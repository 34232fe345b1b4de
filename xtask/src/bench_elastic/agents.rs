//! The agents of one elastic job on loopback, ours (`tfcluster run --rdzv`, on the built-in
//! rendezvous or on etcd) or torchrun's, each a process with its log in a file; started in the
//! order the measurements need and stopped as a whole.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::mark;
use crate::child::{Running, release, status_mb};

/// How the launchers' restarts are configured: one restart per measured failure.
pub(super) const MAX_RESTARTS: u32 = 5;

/// Which agent runs the job.
#[derive(Clone, Debug)]
pub(super) enum Launcher {
    /// `tfcluster run --rdzv 127.0.0.1:PORT`, release build: the built-in rendezvous, served
    /// by the first agent.
    Ours,
    /// `tfcluster run --rdzv etcd://...`, release build: the rendezvous kept in an etcd
    /// cluster, every agent equal.
    OursEtcd(Etcd),
    /// torchrun of the venv at this path, c10d rendezvous.
    Torchrun(PathBuf),
}

/// The etcd cluster [`Launcher::OursEtcd`]'s agents use.
#[derive(Clone, Debug)]
pub(super) struct Etcd {
    /// `--rdzv`'s value: `etcd://HOST:PORT,...`.
    pub(super) rdzv: String,
    /// The members' processes, whose CPU time a rendezvous also costs.
    pub(super) members: Vec<u32>,
}

impl Launcher {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::Ours => "tfcluster",
            Self::OursEtcd(_) => "tfcluster-etcd",
            Self::Torchrun(_) => "torchrun",
        }
    }

    /// Whether it is `tfcluster run`, on either backend (its logs, its rounds).
    pub(super) fn is_ours(&self) -> bool {
        matches!(self, Self::Ours | Self::OursEtcd(_))
    }

    /// Whether its first agent also serves the rendezvous (ours on the built-in one;
    /// torchrun's hosts the c10d store); on etcd every agent is equal.
    pub(super) fn first_serves(&self) -> bool {
        !matches!(self, Self::OursEtcd(_))
    }

    /// The processes besides the agents that serve its rendezvous (etcd's members).
    pub(super) fn servers(&self) -> &[u32] {
        match self {
            Self::OursEtcd(etcd) => &etcd.members,
            Self::Ours | Self::Torchrun(_) => &[],
        }
    }

    /// The line in an agent's log that says it has joined (or is joining) the rendezvous.
    fn joined_line(&self) -> &'static str {
        match self {
            // The agent's info line once its join was answered.
            Self::Ours | Self::OursEtcd(_) => " joined ",
            // torchrun's info line just before it joins (its join itself is logged only at
            // debug level): a settling pause follows.
            Self::Torchrun(_) => "Rendezvous'ing worker group",
        }
    }

    /// How long to let joined agents settle into their wait before the last one starts.
    fn settle(&self, nodes: usize) -> Duration {
        match self {
            Self::Ours | Self::OursEtcd(_) => Duration::from_millis(200 + 10 * nodes as u64),
            Self::Torchrun(_) => Duration::from_millis(2000 + 50 * nodes as u64),
        }
    }

    /// One agent of job `job` of `nodes` hosts (min = max), its rendezvous at `port` (the
    /// built-in one and torchrun's), running the mark task into `marks`.
    fn command(&self, job: &str, nodes: usize, port: u16, marks: &Path) -> Command {
        let endpoint = format!("127.0.0.1:{port}");
        let nodes = nodes.to_string();
        let restarts = MAX_RESTARTS.to_string();
        // Ours, on either backend: the same command but for `--rdzv`.
        let tfcluster = |rdzv: &str| {
            let mut command = Command::new(release("tfcluster"));
            command.args(["-v", "run", "--rdzv", rdzv, "--nodes", &nodes]);
            command.args(["--tasks-per-node", "1", "--rdzv-id", job, "--grace", "0s"]);
            command.args(["--max-restarts", &restarts, "--"]);
            // Plain log lines, to read and to search for the joined line.
            command.env("NO_COLOR", "1");
            command
        };
        let mut command = match self {
            Self::Ours => tfcluster(&endpoint),
            Self::OursEtcd(etcd) => tfcluster(&etcd.rdzv),
            Self::Torchrun(torchrun) => {
                let mut command = Command::new(torchrun);
                command.args(["--nnodes", &format!("{nodes}:{nodes}"), "--nproc-per-node"]);
                command.args(["1", "--rdzv-backend", "c10d", "--rdzv-endpoint", &endpoint]);
                command.args(["--rdzv-id", job, "--monitor-interval", "0.1"]);
                command.args(["--max-restarts", &restarts, "--no-python"]);
                // Its info lines say when an agent joins; warnings are its default.
                command.env("LOGLEVEL", "INFO");
                command
            }
        };
        command.arg(mark::program()).arg(marks);
        command
    }
}

/// An agent process's memory.
#[derive(Clone, Copy, Debug)]
pub(super) struct Memory {
    /// Resident (VmRSS), in MB: what `ps` and `top` show.
    pub(super) resident_mb: f64,
    /// Its private part (RssAnon), in MB; the rest is mapped files, mostly the binary's and
    /// the libraries' pages, which every agent of a host shares.
    pub(super) private_mb: f64,
}

/// A job's agents, stopped (SIGTERM, then SIGKILL) with their tasks when dropped.
pub(super) struct Agents {
    launcher: Launcher,
    nodes: usize,
    /// Its `--rdzv-id`: its directory's name, so that no two jobs of a run share one (on
    /// etcd, which outlives a job, the next would find the last one's record).
    job: String,
    port: u16,
    dir: PathBuf,
    agents: Vec<Running>,
}

impl Agents {
    /// A job of `nodes` agents whose marks and logs go to `dir` (made anew); none started.
    pub(super) fn new(launcher: &Launcher, nodes: usize, dir: PathBuf) -> Result<Self, String> {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("marks"))
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let job = dir
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| format!("{} has no name to be a job's", dir.display()))?
            .to_owned();
        Ok(Self {
            launcher: launcher.clone(),
            nodes,
            job,
            port: free_port()?,
            dir,
            agents: Vec::new(),
        })
    }

    pub(super) fn marks(&self) -> PathBuf {
        self.dir.join("marks")
    }

    fn log(&self, agent: usize) -> PathBuf {
        self.dir.join(format!("agent{agent}.log"))
    }

    /// Starts the next agent, its output to its log file.
    pub(super) fn start_one(&mut self) -> Result<(), String> {
        let index = self.agents.len();
        let log = File::create(self.log(index))
            .map_err(|e| format!("cannot create {}: {e}", self.log(index).display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut command = self
            .launcher
            .command(&self.job, self.nodes, self.port, &self.marks());
        let child = command
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        self.agents.push(Running(child));
        Ok(())
    }

    /// Starts every agent but the last: the first alone (it serves the rendezvous; on etcd it
    /// makes the job's record), then the rest; returns once each has joined and they had time to settle into their waits.
    pub(super) fn start_all_but_last(&mut self, timeout: Duration) -> Result<(), String> {
        self.start_one()?;
        self.wait_joined(timeout)?;
        while self.agents.len() < self.nodes - 1 {
            self.start_one()?;
        }
        self.wait_joined(timeout)?;
        std::thread::sleep(self.launcher.settle(self.nodes));
        Ok(())
    }

    /// Waits until every started agent's log has its joined line.
    fn wait_joined(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let waiting: Vec<usize> = (0..self.agents.len())
                .filter(|&i| {
                    !fs::read_to_string(self.log(i))
                        .is_ok_and(|log| log.contains(self.launcher.joined_line()))
                })
                .collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if let Some(i) = waiting
                .iter()
                .copied()
                .find(|&i| matches!(self.agents[i].0.try_wait(), Ok(Some(_))))
            {
                return Err(format!(
                    "{} agent {i} exited before joining; its log:\n{}",
                    self.launcher.name(),
                    fs::read_to_string(self.log(i)).unwrap_or_default()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} of {} {} agents had not joined within {timeout:?} (logs in {})",
                    waiting.len(),
                    self.agents.len(),
                    self.launcher.name(),
                    self.dir.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every task of a round started after `after_ns` has left its mark, and
    /// returns the marks (as [`mark::wait_for`]); an error quotes the first error an agent
    /// printed, if any did (an agent that gave up).
    pub(super) fn wait_for_tasks(
        &self,
        after_ns: u128,
        timeout: Duration,
    ) -> Result<Vec<mark::Mark>, String> {
        mark::wait_for(&self.marks(), self.nodes, after_ns, timeout).map_err(|e| {
            let printed = (0..self.agents.len()).find_map(|i| {
                self.log_text(i)
                    .lines()
                    .find(|line| line.starts_with("tfcluster: error:"))
                    .map(|line| format!("; agent {i}: {line}"))
            });
            format!("{e}{}", printed.unwrap_or_default())
        })
    }

    /// The process ids of the agents started, in start order.
    pub(super) fn pids(&self) -> Vec<u32> {
        self.agents.iter().map(|a| a.0.id()).collect()
    }

    /// What agent `agent` has logged so far.
    pub(super) fn log_text(&self, agent: usize) -> String {
        fs::read_to_string(self.log(agent)).unwrap_or_default()
    }

    /// The memory of each agent process, in start order.
    pub(super) fn memory(&self) -> Result<Vec<Memory>, String> {
        self.pids()
            .into_iter()
            .map(|pid| {
                Ok(Memory {
                    resident_mb: status_mb(pid, "VmRSS")?,
                    private_mb: status_mb(pid, "RssAnon")?,
                })
            })
            .collect()
    }

    /// Stops the agents as a user would (SIGTERM), waits up to `timeout` for them to exit,
    /// kills what is left (agents, then mark tasks).
    pub(super) fn stop(&mut self, timeout: Duration) {
        for agent in &self.agents {
            crate::signal::signal(agent.0.id(), Signal::SIGTERM);
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline
            && self
                .agents
                .iter_mut()
                .any(|a| matches!(a.0.try_wait(), Ok(None)))
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.agents.clear();
        mark::kill_all(&self.marks());
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// A port nothing listens on now (the first agent binds it for the rendezvous).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}
