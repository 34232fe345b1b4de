//! The cluster's hosts as a real network on this one machine: a network namespace per host
//! (`ctl` for slurmctld and the client tools, `node1`..`node3` for the slurmd's), each with a
//! veth on a bridge and an address in 192.0.2.0/24 (TEST-NET-1, reserved for documentation and
//! never routed, so nothing leaves the machine), and `/etc/hosts` naming the nodes.
//!
//! Sharing 127.0.0.1, two ranks on different nodes could get the same address and port; here
//! each node's ranks have the node's own address, as on a real cluster. Processes enter a host
//! with `nsenter --net=…` (not `ip netns exec`, which remounts /sys, where slurmd then finds no
//! cgroup filesystem). Every party, the clients included, is in a namespace: here traffic
//! between the root namespace and a namespace does not get through, though it does between
//! namespaces.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use super::hosts::{CONTROLLER, Host, NODE_HOSTS};
use super::install;

const PREFIX_LEN: u8 = 24;
const BRIDGE: &str = "tfcluster-br";
/// Ends every line this adds to `/etc/hosts`, so teardown removes exactly those.
const HOSTS_MARK: &str = "# tfcluster xtask slurm";
const HOSTS: &str = "/etc/hosts";

/// The network, made by [`Network::create`] and torn down by [`Network::remove`] or on drop.
#[derive(Debug)]
pub(crate) struct Network {
    up: bool,
}

impl Network {
    /// Tears down what an earlier run left, then makes the bridge, the hosts and their
    /// addresses, and adds the node names to `/etc/hosts`. Needs root.
    pub(crate) fn create() -> Result<Network, String> {
        teardown();
        // From here on, an early return drops the network, which removes what was made.
        let network = Network { up: true };
        ip(&["link", "add", BRIDGE, "type", "bridge"])?;
        ip(&["link", "set", BRIDGE, "up"])?;
        for host in std::iter::once(CONTROLLER).chain(NODE_HOSTS) {
            let netns = namespace(host);
            let veth = veth(host);
            ip(&["netns", "add", &netns])?;
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &netns,
            ])?;
            ip(&["link", "set", &veth, "master", BRIDGE, "up"])?;
            let address = format!("{}/{PREFIX_LEN}", host.address);
            ip(&["-n", &netns, "addr", "add", &address, "dev", "eth0"])?;
            ip(&["-n", &netns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &netns, "link", "set", "lo", "up"])?;
        }
        let hosts = fs::read_to_string(HOSTS).map_err(|e| format!("cannot read {HOSTS}: {e}"))?;
        let mut text = unmarked(&hosts);
        for host in NODE_HOSTS {
            text.push_str(&format!("{} {} {HOSTS_MARK}\n", host.address, host.name));
        }
        // Written in place: /etc/hosts may be a mount point, which a rename cannot replace.
        fs::write(HOSTS, text).map_err(|e| format!("cannot write {HOSTS}: {e}"))?;
        Ok(network)
    }

    /// `program` to be run inside `host`'s namespace.
    pub(crate) fn command(&self, host: Host, program: &Path) -> Command {
        let mut command = Command::new(program_path("nsenter"));
        command
            .arg(format!("--net=/run/netns/{}", namespace(host)))
            .arg(program);
        command
    }

    /// Removes the namespaces, the bridge and the `/etc/hosts` lines (after the daemons in
    /// them have stopped).
    pub(crate) fn remove(mut self) {
        self.up = false;
        teardown();
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        if self.up {
            teardown();
        }
    }
}

fn namespace(host: Host) -> String {
    format!("tfcluster-{}", host.name)
}

/// The root namespace's end of the host's veth (at most 15 bytes, as Linux requires).
fn veth(host: Host) -> String {
    format!("tfc-{}", host.name)
}

/// Removes whatever of the network exists; what does not is no error.
fn teardown() {
    for host in std::iter::once(CONTROLLER).chain(NODE_HOSTS) {
        // Deleting a namespace deletes its end of the veth pair, and so the pair.
        let _ = ip(&["netns", "delete", &namespace(host)]);
        let _ = ip(&["link", "delete", &veth(host)]);
    }
    let _ = ip(&["link", "delete", BRIDGE]);
    if let Ok(hosts) = fs::read_to_string(HOSTS) {
        let kept = unmarked(&hosts);
        if kept != hosts {
            let _ = fs::write(HOSTS, kept);
        }
    }
}

/// The lines of a hosts file that this module did not add.
fn unmarked(hosts: &str) -> String {
    hosts
        .lines()
        .filter(|line| !line.ends_with(HOSTS_MARK))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Where `name` is installed; the bare name (and a "cannot run" error naming it) when missing.
fn program_path(name: &str) -> std::path::PathBuf {
    install::program(name).unwrap_or_else(|| name.into())
}

/// Runs `ip ARGS`; an error carries ip's message.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new(install::program("ip").unwrap_or_else(|| "ip".into()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_hosts_lines_are_removed() {
        let hosts = format!("127.0.0.1 localhost\n192.0.2.11 node1 {HOSTS_MARK}\n::1 ip6\n");
        assert_eq!(unmarked(&hosts), "127.0.0.1 localhost\n::1 ip6\n");
    }
}
