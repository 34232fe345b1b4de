//! The etcd cluster our agents on etcd ([`Launcher::OursEtcd`]) keep their rendezvous in: a
//! real three-member etcd on loopback (Debian's `etcd-server`, installed when missing; the
//! `etcd-cluster` crate starts it, its data in memory), started once for a run and killed
//! with it. Each job names its own `--rdzv-id`, so the jobs of a run do not meet in it.
//!
//! [`Launcher::OursEtcd`]: super::agents::Launcher::OursEtcd

use std::process::Command;

use etcd_cluster::EtcdCluster;

use super::agents::Etcd;

/// The cluster's size (issue 22's: "a local three-member etcd").
pub(super) const MEMBERS: usize = 3;

/// A running cluster (killed and removed when dropped) and what the agents need of it.
pub(super) fn start() -> Result<(EtcdCluster, Etcd), String> {
    crate::etcd::ensure_installed()?;
    // The crate panics with every member's command and log tail when a start fails: the
    // panic hook has printed that by the time it is caught here.
    let cluster = std::panic::catch_unwind(|| EtcdCluster::start_local(MEMBERS))
        .map_err(|_| format!("a local etcd cluster of {MEMBERS} members did not start"))?;
    let endpoints = cluster.endpoints();
    let rdzv = format!(
        "etcd://{}",
        endpoints
            .iter()
            .map(|url| url.trim_start_matches("http://"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let members = children_named("etcd");
    if members.len() != MEMBERS {
        return Err(format!(
            "found {} etcd processes started by this one (pids {members:?}), not {MEMBERS}",
            members.len()
        ));
    }
    Ok((cluster, Etcd { rdzv, members }))
}

/// `etcd --version`'s version, as `etcd 3.4.23`.
pub(super) fn version() -> String {
    Command::new("etcd")
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let line = text.lines().find(|l| l.starts_with("etcd Version:"))?;
            Some(format!("etcd {}", line.split(':').nth(1)?.trim()))
        })
        .unwrap_or_else(|| "etcd of unknown version".into())
}

/// The running processes named exactly `name` whose parent is this process.
fn children_named(name: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = crate::proc_stat::running()
        .filter(|p| p.comm == name && p.parent == me)
        .map(|p| p.pid)
        .collect();
    pids.sort_unstable();
    pids
}
