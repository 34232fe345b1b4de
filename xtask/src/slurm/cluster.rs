//! Starting and stopping the local cluster: munged, slurmctld and three slurmd's, all children
//! of this process, all stopped again when the [`Cluster`] is stopped or dropped.

use std::fs;
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::config::{self, CONTROLLER_PORT, Layout, NODES};
use super::daemon::{Daemon, MARKER};
use super::deadline::NotReady;
use super::{deadline, install, leftovers, munge};

/// How long the three nodes get to register and turn idle. Seen: about 2 s.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A running local Slurm cluster: `node1`..`node3` in partition `debug`, 2 CPUs each.
///
/// One per machine at a time (the ports are fixed): starting one stops the daemons of any
/// earlier one, even one of another checkout.
#[derive(Debug)]
pub(crate) struct Cluster {
    /// Its files.
    pub(super) layout: Layout,
    /// The daemons in start order; stopped in reverse.
    daemons: Vec<Daemon>,
    /// Numbers the scratch directories of client calls, so concurrent calls do not share one.
    pub(super) calls: AtomicUsize,
}

impl Cluster {
    /// Installs Slurm if needed, kills leftovers of an earlier run, writes a fresh configuration
    /// and state under `target/slurm/run`, starts every daemon, and waits until all three nodes
    /// are idle. On failure everything started is stopped again and the error carries the
    /// relevant daemon logs.
    pub(crate) fn start() -> Result<Cluster, String> {
        install::ensure_installed()?;
        leftovers::kill_marked(None)?;
        check_ports_free()?;
        let layout = Layout::new(&super::state_dir());
        if layout.run.exists() {
            fs::remove_dir_all(&layout.run)
                .map_err(|e| format!("cannot remove {}: {e}", layout.run.display()))?;
        }
        layout.write(&config::hostname()?)?;
        // From here on, an early return drops the cluster, which stops what was started.
        let mut cluster = Cluster {
            layout,
            daemons: Vec::new(),
            calls: AtomicUsize::new(0),
        };
        cluster.daemons.push(munge::start(&cluster.layout)?);
        let conf = cluster.layout.slurm_conf();
        let mut controller =
            Command::new(install::program("slurmctld").ok_or("slurmctld is not installed")?);
        controller.arg("-D").arg("-f").arg(&conf);
        cluster.spawn("slurmctld", controller)?;
        for (node, _) in NODES {
            let mut slurmd =
                Command::new(install::program("slurmd").ok_or("slurmd is not installed")?);
            slurmd.arg("-D").arg("-N").arg(node).arg("-f").arg(&conf);
            cluster.spawn(&format!("slurmd-{node}"), slurmd)?;
        }
        cluster.wait_idle()?;
        Ok(cluster)
    }

    /// A command for a Slurm client tool, reading this cluster's configuration and none of the
    /// `SLURM_*` variables this process may have inherited (they would change srun's behaviour).
    pub(super) fn client(&self, program: &str) -> Result<Command, String> {
        let mut command = Command::new(
            install::program(program).ok_or_else(|| format!("{program} is not installed"))?,
        );
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SLURM") {
                command.env_remove(name);
            }
        }
        // Marked too: an srun orphaned by a killed run is stopped with the daemons by the next.
        command
            .env("SLURM_CONF", self.layout.slurm_conf())
            .env(MARKER, &self.layout.run);
        Ok(command)
    }

    /// An error for `what` with every daemon's log tail, for failures whose culprit is unclear.
    pub(super) fn failure(&mut self, what: String) -> String {
        let mut message = what;
        for daemon in &mut self.daemons {
            let state = match daemon.exited() {
                Some(status) => format!("exited: {status}"),
                None => "running".to_owned(),
            };
            message.push_str(&format!(
                "\n{} ({state}); {}",
                daemon.name,
                daemon.log_tail()
            ));
        }
        message
    }

    /// Stops every daemon (slurmd's, then slurmctld, then munged) and waits for them to exit.
    pub(crate) fn stop(mut self) -> Result<(), String> {
        self.shutdown()
    }

    fn spawn(&mut self, name: &str, mut command: Command) -> Result<(), String> {
        command.env("SLURM_CONF", self.layout.slurm_conf());
        let log = self.layout.log(name);
        self.daemons
            .push(Daemon::spawn(name, command, &log, &self.layout.run)?);
        Ok(())
    }

    /// Polls sinfo until node1..node3 are all idle; fails at once when a daemon exits.
    fn wait_idle(&mut self) -> Result<(), String> {
        let mut last = String::new();
        let waited = deadline::until(IDLE_TIMEOUT, Duration::from_millis(200), || {
            for daemon in &mut self.daemons {
                daemon.check_running()?;
            }
            let mut sinfo = self.client("sinfo")?;
            sinfo.args(["--noheader", "--Node", "--format=%N %t"]);
            let scratch = self.layout.scratch("sinfo");
            let done = deadline::run(&mut sinfo, &scratch, Duration::from_secs(10))?;
            last = format!("{}{}", done.stdout, done.stderr).trim().to_owned();
            let idle = NODES.iter().all(|(node, _)| {
                done.stdout
                    .lines()
                    .any(|line| line.split_whitespace().eq([*node, "idle"]))
            });
            if done.status.success() && idle {
                Ok(())
            } else {
                Err(NotReady::Yet(format!("sinfo says: {last}")))
            }
        });
        waited.map_err(|e| self.failure(format!("the nodes did not all turn idle: {e}")))
    }

    fn shutdown(&mut self) -> Result<(), String> {
        let mut failures = Vec::new();
        // slurmd's first and all at once (it is quicker), then slurmctld, which they report
        // to as they go; munged last, as every Slurm message is authenticated through it.
        let slurmds: Vec<usize> = (0..self.daemons.len())
            .filter(|&i| self.daemons[i].name.starts_with("slurmd"))
            .collect();
        for &i in &slurmds {
            self.daemons[i].terminate();
        }
        while let Some(mut daemon) = self.daemons.pop() {
            if let Err(e) = daemon.stop() {
                failures.push(e);
            }
        }
        // A slurmstepd whose slurmd is gone can linger, retrying to report its step.
        if let Err(e) = leftovers::kill_marked(Some(&self.layout.run)) {
            failures.push(e);
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n"))
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Empty after `stop` (nothing left to do) or when `start` failed before any daemon.
        if self.daemons.is_empty() {
            return;
        }
        if let Err(e) = self.shutdown() {
            eprintln!("xtask: stopping the slurm cluster: {e}");
        }
    }
}

/// Fails, naming the port and any Slurm or MUNGE daemon we did not start, when a port the
/// cluster needs is taken.
fn check_ports_free() -> Result<(), String> {
    let ports = std::iter::once(CONTROLLER_PORT).chain(NODES.iter().map(|(_, port)| *port));
    let taken: Vec<String> = ports
        .filter(|port| TcpListener::bind(("0.0.0.0", *port)).is_err())
        .map(|port| port.to_string())
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    let others: Vec<String> = leftovers::unmarked_daemons()
        .into_iter()
        .map(|p| format!("\n    pid {} {}", p.pid, p.command))
        .collect();
    Err(format!(
        "port(s) {} needed by the local slurm cluster are in use (`ss -ltnp` shows by whom){}",
        taken.join(", "),
        if others.is_empty() {
            String::new()
        } else {
            format!(
                "; Slurm/MUNGE daemons not started by xtask are running:{}",
                others.concat()
            )
        }
    ))
}
