//! A `tfcluster run` started by a test: its output collected as it comes, signals sent to
//! it, and on drop stopped as a user would (SIGTERM, which stops its tasks) and reaped, so no
//! test leaves a process behind.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A running `tfcluster run ...`.
pub(super) struct Launch {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Launch {
    /// Starts `tfcluster` with `args` and `env` added (TensorFlow quiet and on the CPU).
    pub(super) fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_without(args, env, &[])
    }

    /// As [`start`](Self::start), with the variables `remove` taken out of its environment
    /// (`CUDA_VISIBLE_DEVICES` too, which `start` sets to `""`).
    pub(super) fn start_without(args: &[&str], env: &[(&str, &str)], remove: &[&str]) -> Self {
        let command = Command::new(env!("CARGO_BIN_EXE_tfcluster"));
        Self::start_by(command, args, env, remove)
    }

    /// [`start_without`](Self::start_without) by `command`: the binary itself, or a wrapper
    /// that execs it with the arguments that follow (`nsenter --net=… BINARY`, which keeps the
    /// pid).
    pub(super) fn start_by(
        mut command: Command,
        args: &[&str],
        env: &[(&str, &str)],
        remove: &[&str],
    ) -> Self {
        command
            .args(args)
            .env("TF_CPP_MIN_LOG_LEVEL", "2")
            .env("CUDA_VISIBLE_DEVICES", "")
            .envs(env.iter().copied());
        for name in remove {
            command.env_remove(name);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let collect = |mut pipe: Box<dyn Read + Send>| {
            let text = Arc::new(Mutex::new(String::new()));
            let sink = text.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    lock(&sink).push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
            text
        };
        let stdout = collect(Box::new(child.stdout.take().expect("piped")));
        let stderr = collect(Box::new(child.stderr.take().expect("piped")));
        Self {
            child,
            stdout,
            stderr,
        }
    }

    /// What it printed to stdout so far.
    pub(super) fn stdout(&self) -> String {
        lock(&self.stdout).clone()
    }

    /// What it printed to stderr so far.
    pub(super) fn stderr(&self) -> String {
        lock(&self.stderr).clone()
    }

    /// Its exit status, waiting at most `timeout`.
    ///
    /// # Panics
    ///
    /// If it runs longer, with its output.
    pub(super) fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("waitable") {
                // The collectors finish when the pipes close, right after the exit.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            if started.elapsed() > timeout {
                self.fail(&format!("still running after {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until stdout holds `count` lines containing `needle`, and returns them.
    pub(super) fn lines_with(&self, needle: &str, count: usize, timeout: Duration) -> Vec<String> {
        let started = Instant::now();
        loop {
            let lines: Vec<String> = self
                .stdout()
                .lines()
                .filter(|line| line.contains(needle))
                .map(str::to_owned)
                .collect();
            if lines.len() >= count {
                return lines;
            }
            if started.elapsed() > timeout {
                self.fail(&format!(
                    "{count} lines with {needle:?} not seen in {timeout:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the `tfcluster` process.
    pub(super) fn signal(&self, signal: Signal) {
        kill(pid(self.child.id()), signal).expect("tfcluster is running");
    }

    /// Panics with `what` and the output so far.
    pub(super) fn fail(&self, what: &str) -> ! {
        panic!(
            "tfcluster run: {what}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout(),
            self.stderr()
        )
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = kill(pid(self.child.id()), Signal::SIGTERM);
            let started = Instant::now();
            while matches!(self.child.try_wait(), Ok(None))
                && started.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn lock(text: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    text.lock().unwrap_or_else(|e| e.into_inner())
}

fn pid(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).expect("a pid fits i32"))
}

pub(super) use net_hosts::running;

/// Waits (a few seconds at most, a killed process needs a moment to die) until none of
/// `pids` runs; panics naming those that do.
pub(super) fn assert_all_gone(pids: &[u32]) {
    let started = Instant::now();
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| running(p)).collect();
        if left.is_empty() {
            return;
        }
        if started.elapsed() > Duration::from_secs(5) {
            for &p in &left {
                let _ = kill(pid(p), Signal::SIGKILL);
            }
            panic!("processes left running: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
