//! Several hosts on this machine for fault tests: a network namespace per host, each with a
//! veth on a bridge and an address in 192.0.2.64/26 (TEST-NET-1, reserved for documentation and
//! never routed: nothing leaves the machine), a task server process per host (the
//! `task_server` example, which `cargo test` builds), and a client namespace that test code
//! enters on a thread of its own. Everything is removed on drop. Needs root (CI runs as root).
//!
//! Traffic between the root namespace and a namespace does not pass on this machine, but it
//! does between namespaces, so the client is a namespace too.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use nix::sched::{CloneFlags, setns};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The hosts' network: `/26` inside TEST-NET-1, apart from the addresses `cargo xtask slurm`
/// uses.
const NET: &str = "192.0.2";
const FIRST: u8 = 64;

pub(crate) struct Hosts {
    tag: String,
    count: usize,
    servers: Mutex<Vec<Option<Child>>>,
    /// The namespace the hosts' links live in (the test's own), for link changes made from
    /// the client's thread.
    root: File,
}

fn ip(args: &[&str]) {
    let status = Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run ip (iproute2): {e}"));
    assert!(status.success(), "ip {args:?} failed: {status}");
}

impl Hosts {
    /// `count` hosts and a client, their addresses `192.0.2.65`.. and `192.0.2.64`.
    pub(crate) fn create(count: usize) -> Hosts {
        let tag = format!("tfc{}", std::process::id() % 100_000);
        let hosts = Hosts {
            tag,
            count,
            servers: Mutex::new((0..count).map(|_| None).collect()),
            root: File::open("/proc/thread-self/ns/net").expect("this thread's namespace"),
        };
        // Dropped on a failed step, which removes what was made.
        let bridge = hosts.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["link", "set", &bridge, "up"]);
        for i in 0..=count {
            let ns = hosts.namespace(i);
            let veth = hosts.veth(i);
            ip(&["netns", "add", &ns]);
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            ip(&["link", "set", &veth, "master", &bridge, "up"]);
            let address = format!("{NET}.{}/24", FIRST + i as u8);
            ip(&["-n", &ns, "addr", "add", &address, "dev", "eth0"]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        hosts
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    /// Namespace `i`: the client is 0, host `h` is `h + 1`.
    fn namespace(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }

    fn veth(&self, i: usize) -> String {
        format!("{}v{i}", self.tag)
    }

    /// Starts host `h`'s task server (task `h` of job `worker`) on `port` (0: any); returns
    /// its address.
    pub(crate) fn serve(&self, h: usize, port: u16) -> SocketAddr {
        let bind = format!("{NET}.{}:{port}", FIRST + 1 + h as u8);
        let mut child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.namespace(h + 1)))
            .arg(task_server())
            .args(["worker", &h.to_string(), &bind])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run nsenter (util-linux): {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .unwrap();
        let address = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_else(|| panic!("host {h}'s server printed {line:?}"))
            .parse()
            .unwrap();
        self.lock()[h] = Some(child);
        address
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Child>>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `signal` to host `h`'s server.
    pub(crate) fn signal(&self, h: usize, signal: Signal) {
        let pid = self.lock()[h].as_ref().expect("serving").id();
        kill(Pid::from_raw(pid as i32), signal).unwrap();
    }

    /// Kills host `h`'s server and reaps it.
    pub(crate) fn kill(&self, h: usize) {
        let child = self.lock()[h].take();
        if let Some(mut child) = child {
            // A frozen process is thawed first, so that it dies at once.
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Takes host `h`'s link down (packets to and from it vanish) or up. Runs `ip` from the
    /// test's own namespace, where the link is, whichever thread asks.
    pub(crate) fn link(&self, h: usize, up: bool) {
        let veth = self.veth(h + 1);
        std::thread::scope(|s| {
            s.spawn(|| {
                setns(&self.root, CloneFlags::CLONE_NEWNET).expect("setns back to the test's");
                ip(&["link", "set", &veth, if up { "up" } else { "down" }]);
            })
            .join()
            .expect("the link thread")
        });
    }

    /// Runs `f` on a thread inside the client's namespace (sockets it opens are there).
    pub(crate) fn in_client<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.namespace(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                let ns = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
                setns(ns, CloneFlags::CLONE_NEWNET).expect("setns into the client's namespace");
                f()
            })
            .join()
            .expect("the client thread")
        })
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for h in 0..self.count {
            self.kill(h);
        }
        for i in 0..=self.count {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.namespace(i)])
                .status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .status();
    }
}

/// The `task_server` example, built by `cargo test` next to this test binary.
fn task_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples/task_server"))
        .unwrap();
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p remote-connect` (which builds the examples) or \
         `cargo build -p remote-connect --examples`",
        path.display()
    );
    path
}
