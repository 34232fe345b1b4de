//! A cluster's members: each one's process, started, killed, frozen, thawed and restarted, and
//! what a panic shows of it (its command and the tails of its log and console).

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bounded_process::{tail, wait_exit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::EtcdCluster;
use crate::cluster::{POLL, START_TIMEOUT};
use crate::etcdctl::health_args;
use crate::process::{EXIT_POLL, KILL_TIMEOUT, LOG_LINES, command, read, show, shown_output};
use crate::scratch::MARKER;

/// One member: how to start it, and its process while it runs.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) client_url: String,
    /// Its command line, program first (`etcd …`, or `nsenter --net=… etcd …` in a host).
    pub(crate) launch: Vec<OsString>,
    /// etcdctl as run beside it (in its host for [`EtcdCluster::start_in_hosts`]), program
    /// first.
    pub(crate) etcdctl: Vec<OsString>,
    pub(crate) data_dir: PathBuf,
    /// etcd's own log (`--log-outputs`).
    pub(crate) log: PathBuf,
    /// Its stdout and stderr: what it prints before its logger is set up (a flag it refuses),
    /// the few packages that still log through capnslog (rafthttp), and Go's panics.
    pub(crate) console: PathBuf,
    /// `None` once killed.
    pub(crate) child: Option<Child>,
    /// Whether it is SIGSTOPped.
    pub(crate) stopped: AtomicBool,
}

impl EtcdCluster {
    /// Kills member `i` with SIGKILL (as a crash, or a machine losing power: nothing is
    /// flushed) and waits until it is gone. Nothing happens when it is killed already.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it still runs 10 s after SIGKILL.
    pub fn kill(&mut self, i: usize) {
        self.member(i);
        let member = &mut self.members[i];
        let Some(mut child) = member.child.take() else {
            return;
        };
        member.stopped.store(false, Ordering::Relaxed);
        // SIGKILL ends a stopped process too.
        let _ = child.kill();
        if wait_exit(&mut child, KILL_TIMEOUT, EXIT_POLL).is_none() {
            panic!(
                "etcd member {} (pid {}) still runs {KILL_TIMEOUT:?} after SIGKILL\n{}",
                member.name,
                child.id(),
                member.tail()
            );
        }
    }

    /// Freezes member `i` with SIGSTOP: it keeps its sockets but answers nothing (as a machine
    /// that hangs, or a long GC pause). [`etcdctl`](Self::etcdctl) and
    /// [`leader`](Self::leader) leave it out until [`cont`](Self::cont).
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it was killed.
    pub fn stop(&self, i: usize) {
        self.signal(i, Signal::SIGSTOP);
        self.members[i].stopped.store(true, Ordering::Relaxed);
    }

    /// Thaws member `i` (SIGCONT) after [`stop`](Self::stop).
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it was killed.
    pub fn cont(&self, i: usize) {
        self.signal(i, Signal::SIGCONT);
        self.members[i].stopped.store(false, Ordering::Relaxed);
    }

    /// Starts member `i` again on its data dir, with the command it first ran (killing it first
    /// if it runs), and waits until it is healthy: it rejoins the cluster with what it had
    /// persisted.
    ///
    /// # Panics
    ///
    /// When there is no member `i`, or it exits or is not healthy within 30 s (on loopback,
    /// its port may have been taken meanwhile).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        let deadline = Instant::now() + START_TIMEOUT;
        let endpoint = self.members[i].client_url.clone();
        loop {
            self.check_exited(i);
            let health = self.etcdctl_via(i, &[&endpoint], &health_args());
            if health.status.success() {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "restarted etcd member {} is not healthy after {START_TIMEOUT:?}; etcdctl \
                     said:\n{}\n{}",
                    self.members[i].name,
                    shown_output(&health),
                    self.tails()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Panics when member `i` has exited by itself, unless it could not bind its ports:
    /// `Err` then.
    pub(crate) fn check_bind(&mut self, i: usize) -> Result<(), String> {
        let Some(status) = self.exited(i) else {
            return Ok(());
        };
        let member = &self.members[i];
        let text = format!("{}{}", read(&member.log), read(&member.console));
        if text.contains("address already in use") {
            return Err(format!(
                "member {} could not bind its ports ({status})",
                member.name
            ));
        }
        self.died(i, status)
    }

    /// Starts member `i`'s process.
    pub(crate) fn spawn(&mut self, i: usize) {
        let dir = self.dir.clone();
        let member = &mut self.members[i];
        let console = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&member.console)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", member.console.display()));
        let console_err = console
            .try_clone()
            .unwrap_or_else(|e| panic!("{}: {e}", member.console.display()));
        let mut command = command(&member.launch);
        command
            .env(MARKER, &dir)
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(console_err);
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start etcd member {} (is Debian's etcd-server installed? cargo xtask \
                 test installs it): {}: {e}",
                member.name,
                show(&member.launch)
            )
        });
        member.child = Some(child);
        member.stopped.store(false, Ordering::Relaxed);
    }

    /// Member `i`, or a panic naming the members there are.
    pub(crate) fn member(&self, i: usize) -> &Member {
        self.members.get(i).unwrap_or_else(|| {
            panic!(
                "no etcd member {i}: the cluster has {} (0 to {})",
                self.members.len(),
                self.members.len().saturating_sub(1)
            )
        })
    }

    /// How member `i` exited, if it has (not when we killed it).
    fn exited(&mut self, i: usize) -> Option<ExitStatus> {
        let child = self.members[i].child.as_mut()?;
        match child.try_wait() {
            Ok(status) => status,
            Err(e) => panic!("waiting for etcd member {}: {e}", self.members[i].name),
        }
    }

    /// Panics when member `i` has exited by itself.
    pub(crate) fn check_exited(&mut self, i: usize) {
        if let Some(status) = self.exited(i) {
            self.died(i, status);
        }
    }

    /// Panics for member `i`, which exited with `status` by itself.
    fn died(&self, i: usize, status: ExitStatus) -> ! {
        let member = &self.members[i];
        panic!(
            "etcd member {} exited ({status})\n{}",
            member.name,
            self.tails()
        )
    }

    /// Sends `signal` to member `i`.
    pub(crate) fn signal(&self, i: usize, signal: Signal) {
        let member = self.member(i);
        let child = member.child.as_ref().unwrap_or_else(|| {
            panic!(
                "cannot send {signal} to etcd member {}: it was killed",
                member.name
            )
        });
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits i32"));
        kill(pid, signal).unwrap_or_else(|e| {
            panic!(
                "{signal} to etcd member {} (pid {pid}): {e}\n{}",
                member.name,
                member.tail()
            )
        });
    }

    /// The members that run: started, not killed, not stopped, not exited.
    pub(crate) fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| {
                let member = &self.members[i];
                member
                    .child
                    .as_ref()
                    .is_some_and(|child| net_hosts::running(child.id()))
                    && !member.stopped.load(Ordering::Relaxed)
            })
            .collect()
    }

    /// SIGKILLs every member and waits for each (a bounded wait; no panic: drop runs it).
    pub(crate) fn kill_all(&mut self) {
        for member in &mut self.members {
            let Some(mut child) = member.child.take() else {
                continue;
            };
            let _ = child.kill();
            if wait_exit(&mut child, KILL_TIMEOUT, EXIT_POLL).is_none() {
                eprintln!(
                    "etcd-cluster: member {} (pid {}) still runs {KILL_TIMEOUT:?} after SIGKILL",
                    member.name,
                    child.id()
                );
            }
        }
    }
}

impl Member {
    /// Its client URL's address.
    pub(crate) fn client_address(&self) -> SocketAddr {
        let (_, address) = self
            .client_url
            .split_once("://")
            .expect("a client URL has a scheme");
        address.parse().expect("a client URL holds an address")
    }

    /// Its command and the tails of its log and console, for a panic.
    pub(crate) fn tail(&self) -> String {
        let pid = match &self.child {
            Some(child) => format!("pid {}", child.id()),
            None => "killed".to_owned(),
        };
        format!(
            "member {} ({pid}): {}\n  log {}:\n{}  stdout and stderr {}:\n{}",
            self.name,
            show(&self.launch),
            self.log.display(),
            tail(&read(&self.log), LOG_LINES),
            self.console.display(),
            tail(&read(&self.console), LOG_LINES),
        )
    }
}
