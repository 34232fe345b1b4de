//! The task both launchers start (`mark_task.rs`, built here), and reading the marks its
//! runs leave: each task's start time, in a file of its own.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::workspace;
use crate::workspace::target_dir;

/// The mark task's binary's name.
const PROGRAM: &str = "mark-task";

/// Where the mark task's binary is.
pub(super) fn program() -> PathBuf {
    target_dir().join("bench-elastic").join(PROGRAM)
}

/// Compiles the mark task (std only, optimised, no symbols) into [`program`].
pub(super) fn build() -> Result<(), String> {
    let source = workspace::root().join("xtask/src/bench_elastic/mark_task.rs");
    let out = program();
    std::fs::create_dir_all(out.parent().expect("target/bench-elastic/"))
        .map_err(|e| format!("cannot make {}: {e}", out.display()))?;
    workspace::run(
        Command::new("rustc")
            .args(["--edition", "2024", "-O", "-C", "panic=abort", "-C"])
            .arg("strip=symbols")
            .arg(source)
            .arg("-o")
            .arg(out),
    )
}

/// One task's start.
#[derive(Clone, Debug)]
pub(super) struct Mark {
    pub(super) pid: u32,
    /// When it started, in nanoseconds since the Unix epoch.
    pub(super) ns: u128,
    /// `TFCLUSTER_ROUND` (ours) or `TORCHELASTIC_RESTART_COUNT` (torchrun's, which counts
    /// per agent: only the agent whose worker failed counts it up).
    pub(super) round: String,
}

/// Every mark written in `dir` so far.
pub(super) fn read(dir: &Path) -> Vec<Mark> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let text = fs::read_to_string(entry.path()).ok()?;
            let (ns, round) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
            Some(Mark {
                pid,
                ns: ns.parse().ok()?,
                round: round.to_owned(),
            })
        })
        .collect()
}

/// Waits until `count` marks started after `after_ns` are in `dir`, and returns them (the
/// earliest `count`, in start order); an error says how many came within `timeout`.
pub(super) fn wait_for(
    dir: &Path,
    count: usize,
    after_ns: u128,
    timeout: Duration,
) -> Result<Vec<Mark>, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut marks: Vec<Mark> = read(dir).into_iter().filter(|m| m.ns > after_ns).collect();
        if marks.len() >= count {
            marks.sort_by_key(|m| m.ns);
            marks.truncate(count);
            return Ok(marks);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "only {} of {count} tasks started within {timeout:?} (marks in {})",
                marks.len(),
                dir.display()
            ));
        }
        // The marks carry their own times: polling slowly only spares the CPU.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills every mark task of `dir` still running (SIGKILL); a pid is checked to be a mark
/// task first, so a reused pid is left alone.
pub(super) fn kill_all(dir: &Path) {
    let pids: HashSet<u32> = read(dir).iter().map(|m| m.pid).collect();
    for pid in pids {
        if is_mark_task(pid) {
            crate::signal::signal(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Whether `pid` runs the mark task.
pub(super) fn is_mark_task(pid: u32) -> bool {
    fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe.ends_with(PROGRAM))
}
