//! Installing a Debian package that ships a service the tests must not find running: its
//! postinst starts the daemon (`/etc/init.d/NAME`, or the systemd unit) wherever no
//! `policy-rc.d` forbids it, while the tests start their own. What the install started is
//! killed; a daemon that ran before is left alone. etcd's ([`crate::etcd`]) and Prometheus's
//! ([`crate::prometheus`]) packages both do this.

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use crate::slurm::deadline;
use crate::{apt, workspace};

/// How long a killed daemon may take to be gone.
const GONE_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs `packages` with apt-get unless every one of `programs` is there ([`apt::ensure`],
/// its output under `target/<scratch>/`), then kills any process named `daemon` that the
/// install started.
pub(crate) fn ensure_installed(
    programs: &[&str],
    packages: &[&str],
    scratch: &str,
    daemon: &str,
) -> Result<(), String> {
    // Only a daemon that was not running before is the install's: others are left alone.
    let before = running(daemon);
    if !apt::ensure(
        programs,
        packages,
        &workspace::root().join("target").join(scratch),
    )? {
        return Ok(());
    }
    let started: BTreeSet<u32> = running(daemon).difference(&before).copied().collect();
    if started.is_empty() {
        return Ok(());
    }
    eprintln!(
        "xtask: the {} package started {daemon} (pid {}); killing it",
        packages.join(" "),
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
        let left: Vec<u32> = running(daemon).intersection(&started).copied().collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= gone_by {
            return Err(format!(
                "the {daemon} the {} package started (pid {left:?}) still runs \
                 {GONE_TIMEOUT:?} after SIGKILL",
                packages.join(" ")
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// The processes named exactly `daemon` that run (what `pgrep -x` lists).
fn running(daemon: &str) -> BTreeSet<u32> {
    crate::proc_stat::running()
        .filter(|p| p.comm == daemon)
        .map(|p| p.pid)
        .collect()
}
