//! Several hosts on this machine for fault tests ([`net_hosts`]: a network namespace per
//! host on a bridge, addresses in 192.0.2.64/26), a task server process per host (the
//! `task_server` example, which `cargo test` builds), and a client host that test code enters
//! on a thread of its own. Everything is removed on drop. Needs root (CI runs as root).

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Mutex;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The client is `net_hosts` host 0 at 192.0.2.64; server host `h` is `h + 1`.
const CLIENT: usize = 0;

pub(crate) struct Hosts {
    servers: Mutex<Vec<Option<Child>>>,
    // Dropped after the servers are killed (fields drop in order).
    net: net_hosts::Hosts,
}

impl Hosts {
    /// `count` hosts and a client, their addresses `192.0.2.65`.. and `192.0.2.64`.
    pub(crate) fn create(count: usize) -> Hosts {
        Hosts {
            servers: Mutex::new((0..count).map(|_| None).collect()),
            net: net_hosts::Hosts::create(count + 1, Ipv4Addr::new(192, 0, 2, 64)),
        }
    }

    /// Starts host `h`'s task server (task `h` of job `worker`) on `port` (0: any); returns
    /// its address.
    pub(crate) fn serve(&self, h: usize, port: u16) -> SocketAddr {
        let bind = format!("{}:{port}", self.net.address(h + 1));
        let mut child = self
            .net
            .command(h + 1, task_server())
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

    /// Takes host `h`'s link down (packets to and from it vanish) or up.
    pub(crate) fn link(&self, h: usize, up: bool) {
        self.net.link(h + 1, up);
    }

    /// Runs `f` on a thread inside the client's host (sockets it opens are there).
    pub(crate) fn in_client<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.net.in_host(CLIENT, f)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let count = self.lock().len();
        for h in 0..count {
            self.kill(h);
        }
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
