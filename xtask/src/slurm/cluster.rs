//! Starting and stopping the local cluster: munged, slurmctld and three slurmd's, all children
//! of this process, slurmctld and each slurmd on a host of its own (a network namespace, see
//! `host_network.rs`), all stopped again, and the network removed, when the [`Cluster`] is stopped
//! or dropped.

use std::fs;
use std::process::Command;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::config::{self, Layout};
use super::daemon::{Daemon, MARKER};
use super::deadline::NotReady;
use super::hosts::{CONTROLLER, Host, NODE_HOSTS, NODES};
use super::{deadline, install, leftovers, munge};
use crate::host_network::Network;

/// How long the three nodes get to register and turn idle. Seen: about 2 s.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A running local Slurm cluster: `node1`..`node3` in partition `debug`, 2 CPUs each, at
/// 192.0.2.11..13.
///
/// One per machine at a time (the namespaces, addresses and MUNGE socket are fixed): starting
/// one stops the daemons of any earlier one, even one of another checkout.
#[derive(Debug)]
pub(crate) struct Cluster {
    /// Its files.
    pub(super) layout: Layout,
    /// The daemons in start order; stopped in reverse.
    daemons: Vec<Daemon>,
    /// Numbers the scratch directories of client calls, so concurrent calls do not share one.
    pub(super) calls: AtomicUsize,
    /// The hosts' network; `None` once removed.
    network: Option<Network>,
}

impl Cluster {
    /// Installs Slurm if needed, kills leftovers of an earlier run, writes a fresh configuration
    /// and state under `target/slurm/run`, starts every daemon, and waits until all three nodes
    /// are idle. On failure everything started is stopped again and the error carries the
    /// relevant daemon logs.
    pub(crate) fn start() -> Result<Cluster, String> {
        install::ensure_installed()?;
        leftovers::kill_marked(None)?;
        let network = Network::create(super::hosts::network_plan())?;
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
            network: Some(network),
        };
        cluster.daemons.push(munge::start(&cluster.layout)?);
        let conf = cluster.layout.slurm_conf();
        let mut controller = cluster.command(CONTROLLER, "slurmctld")?;
        controller.arg("-D").arg("-f").arg(&conf);
        cluster.spawn("slurmctld", controller)?;
        for ((node, _), host) in NODES.into_iter().zip(NODE_HOSTS) {
            let mut slurmd = cluster.command(host, "slurmd")?;
            slurmd.arg("-D").arg("-N").arg(node).arg("-f").arg(&conf);
            cluster.spawn(&format!("slurmd-{node}"), slurmd)?;
        }
        cluster.wait_idle()?;
        Ok(cluster)
    }

    /// `program` (found by [`install::program`]) to be run on `host`.
    fn command(&self, host: Host, program: &str) -> Result<Command, String> {
        let path =
            install::program(program).ok_or_else(|| format!("{program} is not installed"))?;
        let network = self.network.as_ref().ok_or("the network was removed")?;
        Ok(network.command(host.name, &path))
    }

    /// A command for a Slurm client tool on the controller's host, reading this cluster's
    /// configuration and none of the `SLURM_*` variables this process may have inherited (they
    /// would change srun's behaviour).
    pub(super) fn client(&self, program: &str) -> Result<Command, String> {
        let mut command = self.command(CONTROLLER, program)?;
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
        if let Some(network) = self.network.take() {
            network.remove();
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
        // Empty after `stop` (nothing left to do) or when `start` failed before any daemon;
        // a network still up is then removed by its own drop.
        if self.daemons.is_empty() {
            return;
        }
        if let Err(e) = self.shutdown() {
            eprintln!("xtask: stopping the slurm cluster: {e}");
        }
    }
}
