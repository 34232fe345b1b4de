//! A TensorFlow script that keeps running while the test talks to it (servers, clients that
//! wait for the test between steps), killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running Python script in the TensorFlow venv: read its stdout line by line, write lines
/// to its stdin. Killed (and reaped) on drop, so a failing test leaves no process behind.
#[derive(Debug)]
pub struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    script: String,
}

impl Process {
    /// Starts `script` with `args` (as `sys.argv[1:]`).
    ///
    /// # Panics
    ///
    /// If Python cannot start (with how to install the venv).
    pub fn spawn(script: &str, args: &[&str]) -> Self {
        let mut command = vec!["-u", "-c", script];
        command.extend_from_slice(args);
        let mut child = crate::start(&command);
        let (send, lines) = channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&text);
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            script: script.to_owned(),
        }
    }

    /// The next line the script prints.
    ///
    /// # Panics
    ///
    /// If none comes within `timeout` or the script ends first: the message carries its
    /// stderr.
    pub fn line(&mut self, timeout: Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => self.fail(&format!("no line within {timeout:?}")),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                self.fail(&format!(
                    "the script ended ({status:?}) before printing a line"
                ))
            }
        }
    }

    /// The next line that starts with `prefix`, with the prefix and one space removed; other
    /// lines are skipped (TensorFlow prints some of its own).
    pub fn expect(&mut self, prefix: &str, timeout: Duration) -> String {
        let until = std::time::Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let line = self.line(left);
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim_start().to_owned();
            }
        }
    }

    /// Writes `line` and a newline to the script's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        if writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .is_err()
        {
            self.fail("the script closed its stdin");
        }
    }

    /// What the script wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "TensorFlow script: {what}\n--- stderr ---\n{}\n--- script ---\n{}",
            self.stderr(),
            self.script
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a script may take to import TensorFlow and reach its first line.
pub const STARTUP: Duration = Duration::from_secs(120);
