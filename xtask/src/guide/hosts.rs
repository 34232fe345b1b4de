//! Network-namespace hosts with the names an example gives them (`node0`, `etcd0`,
//! `rdzv-host`), written into `/etc/hosts` while they live, so the block's host names resolve
//! as on a real cluster.

use std::net::Ipv4Addr;

use etcd_cluster::EtcdCluster;
use net_hosts::Hosts;

/// Ends every line this adds to `/etc/hosts`, so removal takes exactly those.
const MARK: &str = "# tfcluster xtask guide";
const ETC_HOSTS: &str = "/etc/hosts";
/// The first host's address (the Slurm suite's hosts are 192.0.2.10-13, on a bridge of its own).
const FIRST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 100);

/// The hosts, named; dropping them removes their names and their namespaces.
#[derive(Debug)]
pub(crate) struct Named {
    hosts: Hosts,
}

impl Named {
    /// One host per name, each named in `/etc/hosts`.
    pub(crate) fn create(names: &[String]) -> Result<Named, String> {
        let hosts = std::panic::catch_unwind(|| Hosts::create(names.len(), FIRST))
            .map_err(|_| format!("cannot make the hosts {names:?} (root, iproute2?)"))?;
        let named = Named { hosts };
        let mut text = unmarked()?;
        for (i, name) in names.iter().enumerate() {
            text.push_str(&format!("{} {name} {MARK}\n", named.hosts.address(i)));
        }
        write(&text)?;
        Ok(named)
    }

    /// Host `i`.
    pub(crate) fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// An etcd member on every host, on etcd's own ports.
    pub(crate) fn etcd(&self) -> Result<EtcdCluster, String> {
        let on: Vec<usize> = (0..self.hosts.count()).collect();
        std::panic::catch_unwind(|| EtcdCluster::start_in_hosts(&self.hosts, &on))
            .map_err(|_| "the etcd members did not start (see the panic above)".to_owned())
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        if let Ok(text) = unmarked() {
            let _ = write(&text);
        }
    }
}

/// `/etc/hosts` without the lines this added.
fn unmarked() -> Result<String, String> {
    let text =
        std::fs::read_to_string(ETC_HOSTS).map_err(|e| format!("cannot read {ETC_HOSTS}: {e}"))?;
    Ok(text
        .lines()
        .filter(|line| !line.ends_with(MARK))
        .map(|line| format!("{line}\n"))
        .collect())
}

/// Written in place: `/etc/hosts` may be a mount point, which a rename cannot replace.
fn write(text: &str) -> Result<(), String> {
    std::fs::write(ETC_HOSTS, text).map_err(|e| format!("cannot write {ETC_HOSTS}: {e}"))
}
