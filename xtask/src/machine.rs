//! The machine a benchmark ran on, for a report: CPU, cores, memory, kernel, Rust, date, and
//! the load at the time.

use std::fs;
use std::process::Command;

/// `CPU, N cores available, M GiB memory, Linux K; rustc V; measured DATE`.
pub(crate) fn describe() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory_gib = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 1024.0 / 1024.0)
        })
        .unwrap_or(0.0);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_owned())
        .unwrap_or_default();
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let rustc = output("rustc", &["--version"]);
    format!(
        "{cpu}, {cores} cores available, {memory_gib:.0} GiB memory, Linux {kernel}; {rustc}; \
         measured {date}"
    )
}

/// The load averages over 1, 5 and 15 minutes, as `uptime` shows them: `1.52, 1.10, 0.98`.
pub(crate) fn load() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "unknown".into())
}

fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
