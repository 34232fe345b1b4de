//! The configuration that lets `scontrol show hostnames` (Slurm's own hostlist expansion, a
//! test oracle) run without a cluster: scontrol refuses to start without a `slurm.conf`
//! ("Could not establish a configuration source"), but needs only these two keys for it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{deadline, install};

/// Writes `target/slurm/oracle.conf` (idempotent) and returns its path, for `SLURM_CONF`.
pub(crate) fn oracle_conf() -> Result<PathBuf, String> {
    let dir = super::state_dir();
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("oracle.conf");
    let text = "# Written by xtask: enough for `scontrol show hostnames`; no daemon reads it.\n\
                ClusterName=oracle\nSlurmctldHost=localhost\n";
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Expands `hostlist` with `scontrol show hostnames`, reading `conf` (see [`oracle_conf`]).
pub(crate) fn show_hostnames(conf: &Path, hostlist: &str) -> Result<Vec<String>, String> {
    let mut scontrol =
        Command::new(install::program("scontrol").ok_or("scontrol is not installed")?);
    scontrol
        .args(["show", "hostnames", hostlist])
        .env("SLURM_CONF", conf);
    let shown = deadline::show(&scontrol);
    let scratch = super::state_dir().join("oracle");
    let done = deadline::run(&mut scontrol, &scratch, Duration::from_secs(10))?.success(&shown)?;
    Ok(done.stdout.lines().map(str::to_owned).collect())
}
