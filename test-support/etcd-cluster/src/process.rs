//! Processes run with bounds: etcd's and etcdctl's commands without the environment that would
//! change their flags, etcdctl's runs killed when they outlive a timeout, bounded waits for a
//! child to exit, and what a panic shows of a command and its output.

use std::ffi::OsString;
use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bounded_process::{tail, wait_exit};

/// How long a member may take to be gone after SIGKILL.
pub(crate) const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a wait for a process to exit looks again.
pub(crate) const EXIT_POLL: Duration = Duration::from_millis(10);
/// Lines of a member's log shown in a panic (zap lines are long).
pub(crate) const LOG_LINES: usize = 20;
/// etcdctl runs so far by this process: each gets output files of its own.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// A command for `parts` (program first), without the environment that would change etcd's
/// or etcdctl's flags: etcd reads `ETCD_*` as flags and exits when one is also given on the
/// command line; etcdctl reads `ETCDCTL_*` (`ETCDCTL_API=2` would change the API).
pub(crate) fn command(parts: &[OsString]) -> Command {
    let mut command = Command::new(&parts[0]);
    command.args(&parts[1..]);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("ETCD") {
            command.env_remove(key);
        }
    }
    command
}

/// `parts` as a person would type them, for messages.
pub(crate) fn show(parts: &[OsString]) -> String {
    parts
        .iter()
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `command` with no stdin and its stdout and stderr through files in `dir` (a pipe would
/// need a reader per stream), killing it and panicking when it outlives `timeout`.
pub(crate) fn run_bounded(command: &mut Command, dir: &Path, timeout: Duration) -> Output {
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let out = dir.join(format!("etcdctl.{n}.out"));
    let err = dir.join(format!("etcdctl.{n}.err"));
    let create =
        |path: &Path| File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(create(&out))
        .stderr(create(&err))
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {shown} (is Debian's etcd-client installed? cargo xtask test \
                 installs it): {e}"
            )
        });
    let status = wait_exit(&mut child, timeout, EXIT_POLL);
    let take = |path: &Path| {
        let bytes = fs::read(path).unwrap_or_default();
        let _ = fs::remove_file(path);
        bytes
    };
    let output = Output {
        status: status.unwrap_or_else(|| {
            let _ = child.kill();
            wait_exit(&mut child, KILL_TIMEOUT, EXIT_POLL)
                .unwrap_or_else(|| panic!("{shown} outlived {timeout:?} and SIGKILL"))
        }),
        stdout: take(&out),
        stderr: take(&err),
    };
    if status.is_none() {
        panic!(
            "{shown} did not finish within {timeout:?} and was killed:\n{}",
            shown_output(&output)
        );
    }
    output
}

/// A command's exit status and output, indented, for a panic.
pub(crate) fn shown_output(output: &Output) -> String {
    format!(
        "  ({})\n  stdout:\n{}  stderr:\n{}",
        output.status,
        tail(&String::from_utf8_lossy(&output.stdout), LOG_LINES),
        tail(&String::from_utf8_lossy(&output.stderr), LOG_LINES)
    )
}

/// A file's text, or nothing.
pub(crate) fn read(path: &Path) -> String {
    String::from_utf8_lossy(&fs::read(path).unwrap_or_default()).into_owned()
}
