//! Child processes the benchmarks run: release binaries, a guard that kills and reaps a
//! child when dropped, and a process's resident memory.

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

/// The target directory cargo builds into.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace::root().join("target"))
}

/// A release build's binary or example (`examples/NAME`).
pub(crate) fn release(name: &str) -> PathBuf {
    target_dir().join("release").join(name)
}

/// The resident memory (VmRSS) of process `pid`, in MB.
pub(crate) fn rss_mb(pid: u32) -> Result<f64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .ok_or_else(|| format!("no VmRSS for pid {pid}"))
}
