//! A `tfcluster run` started by a test: its output collected as it comes, signals sent to
//! it, and on drop stopped as a user would (SIGTERM, which stops its tasks) and reaped, so no
//! test leaves a process behind. Once it has exited, its output is whole: [`Launch::wait`]
//! reads stdout and stderr to their end.

use std::io::Write;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How long the output may stay open after the process exits: only a process it started and
/// left running holds it longer.
const OUTPUT_CLOSES_WITHIN: Duration = Duration::from_secs(10);

/// A running `tfcluster run ...`.
pub(super) struct Launch {
    child: Child,
    /// When it was spawned.
    started: Instant,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Each output reader's end: which stream, and when it read the end (or why it failed).
    ends: Receiver<(&'static str, Result<Instant, String>)>,
    /// When both streams had ended, once [`wait`](Self::wait) has seen it.
    ended: Option<Instant>,
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
        let (to_waiter, ends) = channel();
        let stdout = collect("stdout", child.stdout.take().expect("piped"), &to_waiter);
        let stderr = collect("stderr", child.stderr.take().expect("piped"), &to_waiter);
        Self {
            child,
            started: Instant::now(),
            stdout,
            stderr,
            ends,
            ended: None,
        }
    }

    /// What it printed to stdout so far.
    pub(super) fn stdout(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stdout)).into_owned()
    }

    /// What it printed to stderr so far.
    pub(super) fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// Its exit status, waiting at most `timeout`, once its output is read to the end: what
    /// [`stdout`](Self::stdout) and [`stderr`](Self::stderr) return from then on is all it
    /// printed.
    ///
    /// # Panics
    ///
    /// If it runs longer, or its output stays open 10 s after it exited (a process it
    /// started holds it), with its output.
    pub(super) fn wait(&mut self, timeout: Duration) -> ExitStatus {
        self.exited_within(timeout)
            .unwrap_or_else(|| self.fail(&format!("still running after {timeout:?}")))
    }

    /// As [`wait`](Self::wait), but `None` when it still runs after `timeout`: for a test
    /// that shows more than this process's output when it hangs.
    pub(super) fn exited_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("waitable") {
                self.read_to_the_end(status);
                return Some(status);
            }
            if started.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for both output readers to reach the end of their stream, once it exited with
    /// `status` (at once when they already have).
    fn read_to_the_end(&mut self, status: ExitStatus) {
        if self.ended.is_some() {
            return;
        }
        let exited = Instant::now();
        let mut ended = self.started;
        // One end from each stream's reader.
        for _ in 0..2 {
            let left = OUTPUT_CLOSES_WITHIN.saturating_sub(exited.elapsed());
            match self.ends.recv_timeout(left) {
                Ok((_, Ok(at))) => ended = ended.max(at),
                Ok((name, Err(e))) => self.fail(&format!("reading its {name} failed: {e}")),
                Err(_) => self.fail(&format!(
                    "{status}, but its output is still open {OUTPUT_CLOSES_WITHIN:?} later: a \
                     process it started holds it"
                )),
            }
        }
        self.ended = Some(ended);
    }

    /// How long it ran: from its spawn to the end of its output (its exit, to within a
    /// reader thread's wake-up).
    ///
    /// # Panics
    ///
    /// Before [`wait`](Self::wait) has returned.
    pub(super) fn ran_for(&self) -> Duration {
        self.ended.expect("waited for").duration_since(self.started)
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

    /// Waits until stderr holds one of `needles`, and returns the first in `needles` that
    /// it holds; `None` if it exits holding none (its output read to the end).
    pub(super) fn says_first<'a>(
        &mut self,
        needles: &[&'a str],
        timeout: Duration,
    ) -> Option<&'a str> {
        let started = Instant::now();
        loop {
            let exited = self.child.try_wait().expect("waitable");
            if let Some(status) = exited {
                self.read_to_the_end(status);
            }
            let stderr = self.stderr();
            if let Some(needle) = needles.iter().find(|needle| stderr.contains(**needle)) {
                return Some(needle);
            }
            if exited.is_some() {
                return None;
            }
            if started.elapsed() > timeout {
                self.fail(&format!("none of {needles:?} on stderr in {timeout:?}"));
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

/// A thread appending what `pipe` (the child's `name` stream) yields to the text it returns,
/// which tells `to_waiter` when it has read the end.
fn collect(
    name: &'static str,
    mut pipe: impl std::io::Read + Send + 'static,
    to_waiter: &Sender<(&'static str, Result<Instant, String>)>,
) -> Arc<Mutex<Vec<u8>>> {
    let text = Arc::new(Mutex::new(Vec::new()));
    let (mut sink, to_waiter) = (Sink(text.clone()), to_waiter.clone());
    std::thread::spawn(move || {
        // `copy` retries reads a signal interrupted; any other error is the waiter's to say.
        let end = std::io::copy(&mut pipe, &mut sink)
            .map(|_| Instant::now())
            .map_err(|e| e.to_string());
        let _ = to_waiter.send((name, end));
    });
    text
}

/// The collected text of one stream, written to as the bytes come.
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn lock(text: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
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
