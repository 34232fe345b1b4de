//! Hosts as a real network on this one machine, for the suites that run programs on several
//! hosts by name (the Slurm cluster's nodes, an Indexed Job's pods): a network namespace per
//! host, each with a veth on a bridge and an address in 192.0.2.0/24 (TEST-NET-1, reserved for
//! documentation and never routed, so nothing leaves the machine), and `/etc/hosts` lines
//! naming them, each marked with its network's mark so teardown removes exactly those.
//!
//! Sharing 127.0.0.1, two tasks on different hosts could get the same address and port; here
//! each host's programs have the host's own address, as on a real cluster. Processes enter a
//! host with `nsenter --net=…` (not `ip netns exec`, which remounts /sys, where slurmd then finds
//! no cgroup filesystem). Every party, the clients included, is in a namespace: here traffic
//! between the root namespace and a namespace does not get through, though it does between
//! namespaces. (The `net-hosts` crate makes numbered hosts for the Rust tests, without names.)

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::apt;

const PREFIX_LEN: u8 = 24;
const HOSTS: &str = "/etc/hosts";

/// One host of a [`Plan`].
#[derive(Debug, Clone)]
pub(crate) struct Host {
    /// Names its namespace (`tfcluster-NAME`) and veth (`tfc-NAME`, at most 15 bytes).
    pub(crate) name: String,
    /// Its address, in 192.0.2.0/24.
    pub(crate) address: String,
    /// What `/etc/hosts` calls it (none: reached by address only).
    pub(crate) names: Vec<String>,
}

/// A network to make: its bridge, its hosts, and the mark of its `/etc/hosts` lines.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The bridge's name (at most 15 bytes), the network's own.
    pub(crate) bridge: &'static str,
    /// Ends every line this network adds to `/etc/hosts` (`# tfcluster xtask ...`), so its
    /// teardown removes exactly those.
    pub(crate) mark: &'static str,
    pub(crate) hosts: Vec<Host>,
}

/// The network, made by [`Network::create`] and torn down by [`Network::remove`] or on drop.
#[derive(Debug)]
pub(crate) struct Network {
    plan: Plan,
    up: bool,
}

impl Network {
    /// Tears down what an earlier run of `plan` left, then makes the bridge, the hosts and
    /// their addresses, and adds the hosts' names to `/etc/hosts`. Needs root.
    pub(crate) fn create(plan: Plan) -> Result<Network, String> {
        for name in std::iter::once(plan.bridge.to_owned()).chain(plan.hosts.iter().map(veth)) {
            if name.len() > 15 {
                return Err(format!(
                    "the interface name {name} is longer than Linux's 15 bytes"
                ));
            }
        }
        teardown(&plan);
        // From here on, an early return drops the network, which removes what was made.
        let network = Network { plan, up: true };
        let plan = &network.plan;
        ip(&["link", "add", plan.bridge, "type", "bridge"])?;
        ip(&["link", "set", plan.bridge, "up"])?;
        for host in &plan.hosts {
            let netns = namespace(host);
            let veth = veth(host);
            ip(&["netns", "add", &netns])?;
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &netns,
            ])?;
            ip(&["link", "set", &veth, "master", plan.bridge, "up"])?;
            let address = format!("{}/{PREFIX_LEN}", host.address);
            ip(&["-n", &netns, "addr", "add", &address, "dev", "eth0"])?;
            ip(&["-n", &netns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &netns, "link", "set", "lo", "up"])?;
        }
        let hosts = fs::read_to_string(HOSTS).map_err(|e| format!("cannot read {HOSTS}: {e}"))?;
        let mut text = unmarked(&hosts, plan.mark);
        for host in plan.hosts.iter().filter(|host| !host.names.is_empty()) {
            let names = host.names.join(" ");
            text.push_str(&format!("{} {names} {}\n", host.address, plan.mark));
        }
        // Written in place: /etc/hosts may be a mount point, which a rename cannot replace.
        fs::write(HOSTS, text).map_err(|e| format!("cannot write {HOSTS}: {e}"))?;
        Ok(network)
    }

    /// `program` to be run inside the namespace of the host named `host` in the plan (an
    /// unknown name is a namespace that does not exist, which nsenter reports).
    pub(crate) fn command(&self, host: &str, program: &Path) -> Command {
        let mut command = Command::new(program_path("nsenter"));
        command
            .arg(format!("--net=/run/netns/tfcluster-{host}"))
            .arg(program);
        command
    }

    /// Removes the namespaces, the bridge and the `/etc/hosts` lines (after the programs in
    /// them have stopped).
    pub(crate) fn remove(mut self) {
        self.up = false;
        teardown(&self.plan);
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        if self.up {
            teardown(&self.plan);
        }
    }
}

fn namespace(host: &Host) -> String {
    format!("tfcluster-{}", host.name)
}

/// The root namespace's end of the host's veth (at most 15 bytes, as Linux requires).
fn veth(host: &Host) -> String {
    format!("tfc-{}", host.name)
}

/// Removes whatever of `plan`'s network exists; what does not is no error.
fn teardown(plan: &Plan) {
    for host in &plan.hosts {
        // Deleting a namespace deletes its end of the veth pair, and so the pair.
        let _ = ip(&["netns", "delete", &namespace(host)]);
        let _ = ip(&["link", "delete", &veth(host)]);
    }
    let _ = ip(&["link", "delete", plan.bridge]);
    if let Ok(hosts) = fs::read_to_string(HOSTS) {
        let kept = unmarked(&hosts, plan.mark);
        if kept != hosts {
            let _ = fs::write(HOSTS, kept);
        }
    }
}

/// The lines of a hosts file that do not end with `mark`.
fn unmarked(hosts: &str, mark: &str) -> String {
    hosts
        .lines()
        .filter(|line| !line.ends_with(mark))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Where `name` is installed; the bare name (and a "cannot run" error naming it) when missing.
fn program_path(name: &str) -> std::path::PathBuf {
    apt::program(name).unwrap_or_else(|| name.into())
}

/// Runs `ip ARGS`; an error carries ip's message.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new(program_path("ip"))
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
        let mark = "# tfcluster xtask slurm";
        let hosts = format!(
            "127.0.0.1 localhost\n192.0.2.11 node1 {mark}\n192.0.2.21 a b # tfcluster xtask k\n"
        );
        assert_eq!(
            unmarked(&hosts, mark),
            "127.0.0.1 localhost\n192.0.2.21 a b # tfcluster xtask k\n"
        );
    }
}
