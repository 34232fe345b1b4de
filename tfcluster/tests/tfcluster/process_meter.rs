//! What a child process holds and spends, read from `/proc`: its resident memory (`VmRSS` in
//! `/proc/PID/status`), sampled by a thread to catch the peak, its open sockets (in
//! `/proc/PID/fd`), and its CPU time (`utime` + `stime` in `/proc/PID/stat`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A megabyte as the targets count them: 10^6 bytes.
pub(crate) const MB: u64 = 1_000_000;

/// How often [`PeakRss`] reads the process's resident memory.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Resident memory at which [`PeakRss`] kills the process, so that an attack that works
/// cannot take the machine down with it: eight times the targets' 256 MB.
const KILL_ABOVE: u64 = 2_048 * MB;

/// The resident memory of process `pid` in bytes; `None` once it is gone (or a zombie).
pub(crate) fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The soft limit on open files of process `pid` (`Max open files` in `/proc/PID/limits`).
pub(crate) fn open_files_soft_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// How many sockets process `pid` holds open (its descriptors that link to `socket:[…]`).
pub(crate) fn open_sockets(pid: u32) -> Option<usize> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter(|target| target.to_string_lossy().starts_with("socket:"))
            .count(),
    )
}

/// The CPU time process `pid` has used, user and system; `None` once it is gone.
pub(crate) fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, field 2, is in parentheses and may hold spaces: count from after it.
    // Field 3 (the state) is then index 0, utime (field 14) index 11, stime index 12.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // In clock ticks of USER_HZ, which Linux fixes at 100 per second for /proc.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// The CPU time process `pid` uses over the next `window`.
///
/// # Panics
///
/// When the process is gone (or was before): a dead server is no quiet one.
pub(crate) fn cpu_over(pid: u32, window: Duration) -> Duration {
    let read = || cpu_time(pid).unwrap_or_else(|| panic!("process {pid} is gone: no CPU to read"));
    let before = read();
    std::thread::sleep(window);
    read().saturating_sub(before)
}

/// How many quiet slices in a row make a process settled: one can be a starved process's.
const QUIET_SLICES: u32 = 3;

/// Waits until `pid` spends less than `quiet` of CPU over each of [`QUIET_SLICES`] `slice`s
/// in a row, or `within` has passed; returns how long it took. What a server does right
/// after an attack (freeing what it held, closing thousands of sockets) is not idle work,
/// and on a loaded machine it can run late: the idle measurement starts after it. A server
/// that spins never gets quiet, so the measurement after `within` still sees the spin.
pub(crate) fn settle_cpu(pid: u32, slice: Duration, quiet: Duration, within: Duration) -> Duration {
    let started = Instant::now();
    let mut in_a_row = 0;
    while in_a_row < QUIET_SLICES && started.elapsed() < within {
        in_a_row = if cpu_over(pid, slice) < quiet {
            in_a_row + 1
        } else {
            0
        };
    }
    started.elapsed()
}

/// Reads the resident memory of `pid` until it is at most `limit` or `within` has passed:
/// the last reading and how long it took (`None`: the process is gone).
pub(crate) fn settle_rss(pid: u32, limit: u64, within: Duration) -> (Option<u64>, Duration) {
    let started = Instant::now();
    loop {
        let now = rss(pid);
        if now.is_none_or(|bytes| bytes <= limit) || started.elapsed() >= within {
            return (now, started.elapsed());
        }
        std::thread::sleep(SAMPLE_EVERY * 5);
    }
}

/// The highest resident memory of a process while it is watched, read every 20 ms by a
/// thread. Above 2 GB the process is killed (SIGKILL) and the watch says so.
pub(crate) struct PeakRss {
    peak: Arc<AtomicU64>,
    killed: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PeakRss {
    /// Starts watching process `pid`.
    pub(crate) fn watch(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(rss(pid).unwrap_or(0)));
        let killed = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, killed, stop) = (peak.clone(), killed.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(now) = rss(pid) else { return };
                    peak.fetch_max(now, Ordering::Relaxed);
                    if now > KILL_ABOVE {
                        let target = nix::unistd::Pid::from_raw(pid as i32);
                        let _ = nix::sys::signal::kill(target, nix::sys::signal::SIGKILL);
                        killed.store(true, Ordering::Relaxed);
                        return;
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
        };
        Self {
            peak,
            killed,
            stop,
            thread: Some(thread),
        }
    }

    /// The peak so far, in bytes.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Whether the process was killed for passing 2 GB.
    pub(crate) fn killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    /// Stops watching: the peak in bytes, and whether the process was killed for it.
    pub(crate) fn stop(mut self) -> (u64, bool) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        (self.peak(), self.killed())
    }
}

impl Drop for PeakRss {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
