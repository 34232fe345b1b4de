//! Child processes the benchmarks run: release binaries, a guard that kills and reaps a
//! child when dropped, and a process's memory and CPU time.

use std::path::PathBuf;
use std::process::Child;

use crate::workspace;

/// A child process, killed and reaped when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A release build's binary or example (`examples/NAME`).
pub(crate) fn release(name: &str) -> PathBuf {
    workspace::target_dir().join("release").join(name)
}

/// The resident memory (VmRSS) of process `pid`, in MB.
pub(crate) fn rss_mb(pid: u32) -> Result<f64, String> {
    status_mb(pid, "VmRSS")
}

/// A memory figure of `/proc/PID/status` (`VmRSS`, `RssAnon`: its private part, `RssFile`:
/// mapped files, the binary's pages among them, shared with every process mapping them), in
/// MB.
pub(crate) fn status_mb(pid: u32, field: &str) -> Result<f64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .ok_or_else(|| format!("no {field} for pid {pid}"))
}

/// The CPU time process `pid` has used so far, all its threads together, in milliseconds;
/// 0 for a process that is gone.
pub(crate) fn cpu_ms(pid: u32) -> f64 {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let ns: u64 = threads
        .filter_map(Result::ok)
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e6
}
