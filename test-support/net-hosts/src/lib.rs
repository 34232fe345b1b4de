//! Test support: several hosts on this one machine, for tests of what crosses a network.
//!
//! Each host is a network namespace with a veth on a bridge of its own and an address in
//! 192.0.2.0/24 (TEST-NET-1, reserved for documentation and never routed: nothing leaves the
//! machine). Processes enter a host with `nsenter --net=…` ([`Hosts::command`]); test code
//! enters one on a thread of its own ([`Hosts::in_host`]). A host's link can be set down (its
//! packets vanish, as in a partition) and every process in a host killed at once (as when
//! it loses power). Dropping [`Hosts`] kills every process left in its namespaces and removes
//! the namespaces and the bridge; [`sweep`] removes what a killed test process could not drop
//! (every name starts with a prefix only these hosts use). Needs root and iproute2 and
//! util-linux's `nsenter`.
//!
//! Traffic between the test's own (root) namespace and a host does not pass on every
//! machine, but it does between hosts: a client belongs in a host too.
//!
//! Used by remote-connect's fault tests and the CLI's elastic-launch tests.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{CloneFlags, setns};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// What every namespace, bridge and veth of [`Hosts`] is named with first, and nothing else
/// on the machine: [`sweep`] removes by it.
const PREFIX: &str = "tfct";

/// Hosts made so far by this process: each set gets names of its own.
static MADE: AtomicU32 = AtomicU32::new(0);

/// A set of hosts, numbered from 0; see the crate docs.
#[derive(Debug)]
pub struct Hosts {
    tag: String,
    count: usize,
    first: Ipv4Addr,
    /// The namespace the hosts' links live in (the test's own), for link changes made from
    /// any thread.
    root: File,
}

/// Runs `ip ARGS`, panicking with ip's message when it fails.
fn ip(args: &[&str]) {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run ip (iproute2): {e}"));
    assert!(
        output.status.success(),
        "ip {} failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

impl Hosts {
    /// `count` hosts, host `i` at address `first + i` (`first` and the addresses after it
    /// inside 192.0.2.0/24).
    ///
    /// # Panics
    ///
    /// When a step fails (not root, no iproute2); what was made is removed first.
    pub fn create(count: usize, first: Ipv4Addr) -> Hosts {
        let [a, b, c, d] = first.octets();
        assert!(
            [a, b, c] == [192, 0, 2] && usize::from(d) + count <= 255,
            "{first} + {count} hosts leaves 192.0.2.0/24"
        );
        // Interface names have at most 15 bytes: `tfct` + 5 + 2 + `br`.
        let tag = format!(
            "{PREFIX}{}{}",
            std::process::id() % 100_000,
            MADE.fetch_add(1, Ordering::Relaxed) % 100
        );
        let hosts = Hosts {
            tag,
            count,
            first,
            root: File::open("/proc/thread-self/ns/net").expect("this thread's namespace"),
        };
        // From here on a failed step drops `hosts`, which removes what was made.
        let bridge = hosts.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["link", "set", &bridge, "up"]);
        for i in 0..count {
            let ns = hosts.namespace(i);
            let veth = hosts.veth(i);
            ip(&["netns", "add", &ns]);
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            ip(&["link", "set", &veth, "master", &bridge, "up"]);
            let address = format!("{}/24", hosts.address(i));
            ip(&["-n", &ns, "addr", "add", &address, "dev", "eth0"]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        hosts
    }

    /// How many hosts there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Host `i`'s address.
    pub fn address(&self, i: usize) -> Ipv4Addr {
        let [a, b, c, d] = self.first.octets();
        Ipv4Addr::new(a, b, c, d + u8::try_from(i).expect("at most 255 hosts"))
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    fn namespace(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }

    fn veth(&self, i: usize) -> String {
        format!("{}v{i}", self.tag)
    }

    fn namespace_path(&self, i: usize) -> String {
        format!("/run/netns/{}", self.namespace(i))
    }

    /// `program` to be run inside host `i` (by `nsenter`, which execs it: the child's pid is
    /// the program's).
    pub fn command(&self, i: usize, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net={}", self.namespace_path(i)))
            .arg(program);
        command
    }

    /// Runs `f` on a thread inside host `i` (sockets it opens are there).
    pub fn in_host<T: Send>(&self, i: usize, f: impl FnOnce() -> T + Send) -> T {
        let path = self.namespace_path(i);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ns = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
                setns(ns, CloneFlags::CLONE_NEWNET).expect("setns into the host's namespace");
                f()
            })
            .join()
            .expect("the host's thread")
        })
    }

    /// Takes host `i`'s link down (packets to and from it vanish) or up. Runs `ip` from the
    /// test's own namespace, where the link is, whichever thread asks.
    pub fn link(&self, i: usize, up: bool) {
        let veth = self.veth(i);
        std::thread::scope(|s| {
            s.spawn(|| {
                setns(&self.root, CloneFlags::CLONE_NEWNET).expect("setns back to the test's");
                ip(&["link", "set", &veth, if up { "up" } else { "down" }]);
            })
            .join()
            .expect("the link thread")
        });
    }

    /// The processes inside host `i` (those whose network namespace is the host's).
    pub fn processes(&self, i: usize) -> Vec<Pid> {
        processes_in(&self.namespace_path(i))
    }

    /// Kills every process inside host `i` at once, as a host that loses its power, and
    /// waits (a few seconds at most) until none is left running.
    pub fn kill_all(&self, i: usize) {
        kill_all_in(&self.namespace_path(i));
    }
}

/// The processes whose network namespace is the one bound at `path`.
fn processes_in(path: &str) -> Vec<Pid> {
    let Ok(ns) = std::fs::metadata(path) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let net = std::fs::metadata(entry.path().join("ns/net")).ok()?;
            (net.dev() == ns.dev() && net.ino() == ns.ino()).then(|| Pid::from_raw(pid))
        })
        .collect()
}

/// Kills every process in the namespace bound at `path`, waiting (5 s at most) until none
/// runs.
fn kill_all_in(path: &str) {
    let started = Instant::now();
    loop {
        let left: Vec<Pid> = processes_in(path)
            .into_iter()
            .filter(|&pid| running(pid.as_raw().unsigned_abs()))
            .collect();
        if left.is_empty() || started.elapsed() > Duration::from_secs(5) {
            return;
        }
        for pid in left {
            // A frozen process is thawed first, so that it dies at once.
            let _ = kill(pid, Signal::SIGKILL);
            let _ = kill(pid, Signal::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes every namespace, bridge and veth a [`Hosts`] made that is still there (its test
/// process was killed before it could drop them), killing the processes inside first; returns
/// their names. For the start of a test run: it removes those of tests still running too.
pub fn sweep() -> Vec<String> {
    let mut removed = Vec::new();
    let namespaces = Command::new("ip").args(["netns", "list"]).output();
    let namespaces = namespaces.map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
    // `NAME` or `NAME (id: N)` a line.
    for name in namespaces.iter().flat_map(|text| text.lines()) {
        let Some(name) = name
            .split_whitespace()
            .next()
            .filter(|n| n.starts_with(PREFIX))
        else {
            continue;
        };
        kill_all_in(&format!("/run/netns/{name}"));
        let _ = Command::new("ip").args(["netns", "del", name]).status();
        removed.push(name.to_owned());
    }
    let links = Command::new("ip").args(["-o", "link", "show"]).output();
    let links = links.map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
    // `INDEX: NAME[@PEER]: <FLAGS> ...` a line.
    for line in links.iter().flat_map(|text| text.lines()) {
        let Some(name) = line
            .split(": ")
            .nth(1)
            .map(|name| name.split('@').next().unwrap_or(name))
            .filter(|name| name.starts_with(PREFIX))
        else {
            continue;
        };
        let _ = Command::new("ip").args(["link", "del", name]).status();
        removed.push(name.to_owned());
    }
    removed
}

/// Whether process `pid` runs (a zombie does not: it only waits to be reaped, by a parent
/// that may never do it in a container).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for i in 0..self.count {
            self.kill_all(i);
            // Deleting a namespace deletes its end of the veth pair, and so the pair.
            let _ = Command::new("ip")
                .args(["netns", "del", &self.namespace(i)])
                .status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .status();
    }
}
