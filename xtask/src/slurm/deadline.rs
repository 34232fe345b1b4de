//! Running a command, or waiting for a condition, with a deadline: nothing the Slurm task
//! does may hang.
//!
//! Output goes to files rather than pipes: a command that leaves a grandchild behind (a package
//! script starting a service, a daemon forked by a tool) keeps a pipe open forever, a file never
//! blocks the reader.

use std::fs::{self, File};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use bounded_process::{tail, wait_exit};

/// How often a wait looks again; short enough that timings stay honest.
const POLL: Duration = Duration::from_millis(50);

/// What a command printed, and how it ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The exit status.
    pub(crate) status: ExitStatus,
    /// Everything written to standard output.
    pub(crate) stdout: String,
    /// Everything written to standard error.
    pub(crate) stderr: String,
}

impl Finished {
    /// `Ok(self)` when the command exited 0, else an error naming it with its stderr and stdout.
    pub(crate) fn success(self, shown: &str) -> Result<Self, String> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(format!(
                "{shown} failed ({}):\n{}",
                self.status,
                streams(&self.stdout, &self.stderr)
            ))
        }
    }
}

/// Runs `command` with no stdin, its stdout and stderr captured through files named
/// `<scratch>.out` and `<scratch>.err`, killing it when it outlives `timeout`.
pub(crate) fn run(
    command: &mut Command,
    scratch: &Path,
    timeout: Duration,
) -> Result<Finished, String> {
    let shown = show(command);
    let out_path = scratch.with_extension("out");
    let err_path = scratch.with_extension("err");
    if let Some(dir) = scratch.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let create = |path: &Path| {
        File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(create(&out_path)?)
        .stderr(create(&err_path)?)
        .spawn()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    let waited = wait_exit(&mut child, timeout, POLL);
    let read =
        |path: &Path| String::from_utf8_lossy(&fs::read(path).unwrap_or_default()).into_owned();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    match waited {
        Some(status) => Ok(Finished {
            status,
            stdout,
            stderr,
        }),
        None => {
            stop(&mut child, Duration::from_secs(5));
            Err(format!(
                "{shown} did not finish within {timeout:?} and was killed:\n{}",
                streams(&stdout, &stderr)
            ))
        }
    }
}

/// Asks `child` to stop with SIGTERM, gives it `grace` to exit, then kills it; always reaps it.
pub(crate) fn stop(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    signal(child.id(), "TERM");
    if let Some(status) = wait_exit(child, grace, POLL) {
        return Some(status);
    }
    let _ = child.kill();
    // SIGKILL cannot be ignored; the bound only guards against an unkillable (D state) process.
    wait_exit(child, Duration::from_secs(10), POLL)
}

/// Sends `signal` (a name such as `TERM`) to `pid` with kill(1): std has no signal API and the
/// workspace forbids unsafe code. Failure (the process is already gone) is not an error.
pub(crate) fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Why a poll of [`until`] did not succeed.
#[derive(Debug)]
pub(crate) enum NotReady {
    /// Not yet: poll again (the message is shown if the deadline passes).
    Yet(String),
    /// Never will be (a daemon died, a tool is missing): stop waiting.
    Failed(String),
}

/// `?` on a `Result<_, String>` inside a poll means the wait failed for good.
impl From<String> for NotReady {
    fn from(message: String) -> Self {
        NotReady::Failed(message)
    }
}

/// Polls `check` every `interval` until it returns `Ok`, fails, or `timeout` passes.
pub(crate) fn until<T>(
    timeout: Duration,
    interval: Duration,
    mut check: impl FnMut() -> Result<T, NotReady>,
) -> Result<T, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return Ok(value),
            Err(NotReady::Failed(message)) => return Err(message),
            Err(NotReady::Yet(last)) if Instant::now() >= deadline => {
                return Err(format!("still not ready after {timeout:?}: {last}"));
            }
            Err(NotReady::Yet(_)) => thread::sleep(interval),
        }
    }
}

/// The tails of a command's stderr and stdout, whichever are not empty, for an error message.
pub(crate) fn streams(stdout: &str, stderr: &str) -> String {
    match (stdout.trim().is_empty(), stderr.trim().is_empty()) {
        (true, true) => "    (no output)\n".to_owned(),
        (true, false) => tail(stderr, 40),
        (false, true) => tail(stdout, 40),
        (false, false) => format!("{}  stdout:\n{}", tail(stderr, 40), tail(stdout, 20)),
    }
}

/// `command` as a person would type it, for messages.
pub(crate) fn show(command: &Command) -> String {
    let mut shown = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        shown.push(' ');
        shown.push_str(&arg.to_string_lossy());
    }
    shown
}
