//! Clusters' scratch directories, named after the process that owns them, and the sweep of what
//! owners that died (SIGKILLed before they could drop their clusters) left behind: their
//! members, found by the marker in their environment, and their directories.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable that marks a member, set to its cluster's directory, whose name
/// holds the owning process's pid and start time: a member whose owner is gone is killed by the
/// next start in this machine.
pub(crate) const MARKER: &str = "TFCLUSTER_ETCD_CLUSTER";
/// The start of each cluster directory's name.
const DIR_PREFIX: &str = "etcd-cluster.";
/// Clusters made so far by this process: each gets a directory and a token of its own.
static MADE: AtomicU32 = AtomicU32::new(0);

/// Where clusters put their directories: `/dev/shm` when there is one (etcd fsyncs every
/// commit: in memory that costs nothing), the temporary directory elsewhere.
fn base_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A new, empty directory for a cluster, named after this process (its pid and start time) so
/// that a later start knows whether its owner is gone; sweeps what dead owners left first.
pub(crate) fn fresh_dir() -> PathBuf {
    let base = base_dir();
    sweep(&base);
    let (pid, started) = (
        std::process::id(),
        start_time(std::process::id()).unwrap_or(0),
    );
    loop {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{DIR_PREFIX}{pid}.{started}.{n}"));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create {}: {e}", dir.display()),
        }
    }
}

/// When process `pid` started (in clock ticks after boot), if it runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; the fields after the parenthesised command name start at field 3.
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Whether the process that made the cluster directory `name` (`etcd-cluster.PID.START.N`) is
/// gone; `false` for names not of that form.
fn owner_gone(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(DIR_PREFIX) else {
        return false;
    };
    let mut fields = rest.split('.');
    let (Some(pid), Some(started)) = (fields.next(), fields.next()) else {
        return false;
    };
    let (Ok(pid), Ok(started)) = (pid.parse::<u32>(), started.parse::<u64>()) else {
        return false;
    };
    start_time(pid) != Some(started)
}

/// Kills the members of clusters under `base` whose owning process is gone (it was killed
/// before it could drop them), and removes those clusters' directories.
fn sweep(base: &Path) {
    let marker = format!("{MARKER}=");
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(environ) = fs::read(entry.path().join("environ")) else {
                continue;
            };
            let orphan = environ.split(|&b| b == 0).any(|var| {
                let var = String::from_utf8_lossy(var);
                var.strip_prefix(&marker).is_some_and(|dir| {
                    Path::new(dir)
                        .file_name()
                        .is_some_and(|name| owner_gone(&name.to_string_lossy()))
                })
            });
            if orphan {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
    if let Ok(entries) = fs::read_dir(base) {
        for entry in entries.flatten() {
            if owner_gone(&entry.file_name().to_string_lossy()) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}
