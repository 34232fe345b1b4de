//! Installing etcd from Debian's packages (`etcd-server` for `etcd`, `etcd-client` for
//! `etcdctl`, both 3.4) when either program is missing: the etcd rendezvous tests run real
//! three-member clusters of it (the `etcd-cluster` crate starts them).
//!
//! Debian's `etcd-server` also installs a service: its postinst starts `/etc/init.d/etcd` (a
//! daemon on localhost:2379 and 2380, run as user etcd) wherever no `policy-rc.d` forbids it,
//! and enables the systemd unit. The tests start their own members, so an etcd the install
//! started is killed before the tests run.

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use crate::{apt, slurm::deadline, workspace};

/// The programs the tests run.
const PROGRAMS: [&str; 2] = ["etcd", "etcdctl"];

/// Debian's packages that provide [`PROGRAMS`].
const PACKAGES: [&str; 2] = ["etcd-server", "etcd-client"];

/// How long a killed daemon may take to be gone.
const GONE_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs [`PACKAGES`] with apt-get unless `etcd` and `etcdctl` are already there, then kills
/// any etcd the install started.
///
/// Quiet when nothing is missing. apt's output goes to `target/etcd/apt-*` and is shown only
/// when it fails. Needs root, as CI and the development machines run.
pub(crate) fn ensure_installed() -> Result<(), String> {
    // Only an etcd that was not running before is the install's: others are left alone.
    let before = running_etcd();
    if !apt::ensure(&PROGRAMS, &PACKAGES, &workspace::root().join("target/etcd"))? {
        return Ok(());
    }
    let started: BTreeSet<u32> = running_etcd().difference(&before).copied().collect();
    if started.is_empty() {
        return Ok(());
    }
    eprintln!(
        "xtask: the etcd-server package started etcd (pid {}); killing it",
        started
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for &pid in &started {
        deadline::signal(pid, "KILL");
    }
    let gone_by = Instant::now() + GONE_TIMEOUT;
    loop {
        let left: Vec<u32> = running_etcd().intersection(&started).copied().collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= gone_by {
            return Err(format!(
                "the etcd the etcd-server package started (pid {left:?}) still runs \
                 {GONE_TIMEOUT:?} after SIGKILL"
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// The processes named exactly `etcd` that run (what `pgrep -x etcd` lists).
fn running_etcd() -> BTreeSet<u32> {
    crate::proc_stat::running()
        .filter(|p| p.comm == "etcd")
        .map(|p| p.pid)
        .collect()
}
