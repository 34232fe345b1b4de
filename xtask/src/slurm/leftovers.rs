//! Killing what an earlier run left behind (killed before it could stop its daemons), and what
//! outlives a stopped cluster (slurmstepd, ranks), found by the [`MARKER`] in their
//! environment, so a re-run starts from a clean machine.
//!
//! Only marked processes are touched: a Slurm or MUNGE someone else runs on this machine is
//! never killed (and, its ports being in the root network namespace, not in the way).

use std::fs;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::daemon::MARKER;
use super::deadline;

/// A process found in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Process {
    /// Its pid.
    pub(crate) pid: u32,
    /// Its command line, arguments joined by spaces.
    pub(crate) command: String,
}

/// Kills every marked process, or with `run`, those of that run only, and waits until all
/// are gone. SIGKILL at once: their state is wiped anyway, and slurmstepd ignores SIGTERM.
pub(crate) fn kill_marked(run: Option<&Path>) -> Result<(), String> {
    let found = marked(run);
    if found.is_empty() {
        return Ok(());
    }
    for process in &found {
        if run.is_none() {
            eprintln!(
                "xtask: killing a leftover of an earlier run: pid {} {}",
                process.pid, process.command
            );
        }
        deadline::signal(process.pid, "KILL");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && found.iter().any(|p| alive(p.pid)) {
        thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<String> = found
        .iter()
        .filter(|p| alive(p.pid))
        .map(|p| format!("pid {} {}", p.pid, p.command))
        .collect();
    if survivors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "processes of the local slurm cluster survived SIGKILL: {}",
            survivors.join("; ")
        ))
    }
}

/// Every live process carrying [`MARKER`] (with the value `run`, if given), except this one.
fn marked(run: Option<&Path>) -> Vec<Process> {
    let wanted = run.map(|run| format!("{MARKER}={}", run.display()).into_bytes());
    processes()
        .filter(|(_, environ)| match &wanted {
            Some(wanted) => environ
                .split(|&b| b == 0)
                .any(|var| var == wanted.as_slice()),
            None => has_marker(environ),
        })
        .map(|(process, _)| process)
        .collect()
}

/// Every live process other than this one, with its raw environment.
fn processes() -> impl Iterator<Item = (Process, Vec<u8>)> {
    let me = std::process::id();
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(move |&pid| pid != me && alive(pid))
        .filter_map(|pid| {
            // Kernel threads and processes that exited meanwhile have no readable environment.
            let environ = fs::read(format!("/proc/{pid}/environ")).ok()?;
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let command = String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .trim()
                .to_owned();
            Some((Process { pid, command }, environ))
        })
}

fn has_marker(environ: &[u8]) -> bool {
    let prefix = format!("{MARKER}=");
    environ
        .split(|&b| b == 0)
        .any(|var| var.starts_with(prefix.as_bytes()))
}

/// Whether `pid` is a live process: it exists and is not a zombie (for an orphan, init does
/// the wait).
fn alive(pid: u32) -> bool {
    crate::proc_stat::ProcStat::read(pid).is_some_and(|p| p.alive())
}
