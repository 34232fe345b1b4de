//! Where the local cluster keeps its files, and the `slurm.conf` that describes it.
//!
//! Everything Slurm writes lives under `target/slurm/run/`, wiped at each start, so a run never
//! sees jobs or node states from an earlier one. MUNGE's socket lives in `/run/munge` instead:
//! munged runs as user `munge`, which may not be able to reach a checkout under `/root`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::hosts::{CONTROLLER, NODE_HOSTS, NODES};

/// slurmctld's port, Slurm's default.
const CONTROLLER_PORT: u16 = 6817;

/// CPUs per node: with 3 nodes that is 6 slots, room for `srun -N3 -n5`.
const CPUS: u32 = 2;

/// MUNGE's runtime directory, owned by user `munge`, as the Debian package sets it up.
pub(crate) const MUNGE_DIR: &str = "/run/munge";

/// The key every MUNGE daemon of the cluster shares (one machine, so one key).
pub(crate) const MUNGE_KEY: &str = "/etc/munge/munge.key";

/// The paths of one local cluster.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// `target/slurm/run`: wiped and recreated at each start.
    pub(crate) run: PathBuf,
}

impl Layout {
    /// The layout under `state_dir` (the workspace's `target/slurm`).
    pub(crate) fn new(state_dir: &Path) -> Self {
        Layout {
            run: state_dir.join("run"),
        }
    }

    /// The `slurm.conf` every daemon and client reads (through `-f` and `SLURM_CONF`).
    pub(crate) fn slurm_conf(&self) -> PathBuf {
        self.run.join("slurm.conf")
    }

    /// slurmctld's StateSaveLocation.
    fn controller_state(&self) -> PathBuf {
        self.run.join("slurmctld")
    }

    /// The parent of each node's SlurmdSpoolDir (`<this>/<node>`).
    fn spool(&self) -> PathBuf {
        self.run.join("spool")
    }

    /// Where each daemon's stderr goes: `<name>.log`.
    pub(crate) fn log(&self, daemon: &str) -> PathBuf {
        self.run.join("log").join(format!("{daemon}.log"))
    }

    /// Scratch files of client commands (sinfo, srun, munge), one stem per call.
    pub(crate) fn scratch(&self, stem: &str) -> PathBuf {
        self.run.join("cmd").join(stem)
    }

    /// munged's socket: our own name, so a system munged on the default socket does not clash.
    pub(crate) fn munge_socket(&self) -> PathBuf {
        Path::new(MUNGE_DIR).join("tfcluster.socket")
    }

    /// Creates the directories and writes `slurm.conf` for a controller named `hostname`.
    pub(crate) fn write(&self, hostname: &str) -> Result<(), String> {
        let mut dirs = vec![
            self.controller_state(),
            self.run.join("log"),
            self.run.join("cmd"),
        ];
        dirs.extend(NODES.iter().map(|(node, _)| self.spool().join(node)));
        for dir in dirs {
            fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let path = self.slurm_conf();
        fs::write(&path, self.render(hostname))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The text of `slurm.conf`: DESIGN.md's configuration, with every path under [`Layout::run`].
    fn render(&self, hostname: &str) -> String {
        let run = self.run.display();
        let mut conf = format!(
            "\
# Written by `cargo xtask slurm`; rewritten at every start.
ClusterName=tfcluster
# The address in parentheses (the controller's network namespace) spares clients a lookup.
SlurmctldHost={hostname}({controller})
SlurmctldPort={CONTROLLER_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}/%n
SlurmctldPidFile={run}/slurmctld.pid
SlurmdPidFile={run}/slurmd-%n.pid
SwitchType=switch/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Slurm checks that a mailer exists; no job here asks for mail.
MailProg=/bin/true
# Nodes report the CPUs configured here, not the machine's, so a smaller machine does not drain them.
SlurmdParameters=config_overrides
",
            socket = self.munge_socket().display(),
            state = self.controller_state().display(),
            spool = self.spool().display(),
            controller = CONTROLLER.address,
        );
        for ((node, port), host) in NODES.into_iter().zip(NODE_HOSTS) {
            let _ = writeln!(
                conf,
                "NodeName={node} NodeHostname={hostname} NodeAddr={} CPUs={CPUS} Port={port} State=UNKNOWN",
                host.address
            );
        }
        conf.push_str("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
        conf
    }
}

/// This machine's short host name, as Slurm compares it with SlurmctldHost and NodeHostname.
pub(crate) fn hostname() -> Result<String, String> {
    let full = fs::read_to_string("/proc/sys/kernel/hostname")
        .map_err(|e| format!("cannot read the host name from /proc/sys/kernel/hostname: {e}"))?;
    let short = full.trim().split('.').next().unwrap_or_default();
    if short.is_empty() {
        Err("the host name is empty".to_owned())
    } else {
        Ok(short.to_owned())
    }
}
