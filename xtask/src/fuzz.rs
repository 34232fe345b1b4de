//! `cargo xtask fuzz [--seconds N] [TARGET...]`: every cargo-fuzz target of `test-support/fuzz/` (or the
//! named ones) for N seconds each (60 by default), under the memory cap below; it fails if any
//! target failed, saying where libFuzzer left each input.
//!
//! The cap, from the stated memory factors (bytes of memory per byte of input):
//! `hostlist::expand` 48 (the largest in the project), `HostList::parse` 22,
//! `decode_cluster_def` and `ClusterSpec::from_json` 8. Inputs are at most [`MAX_LEN`] = 1 MiB,
//! so a parser within its factor holds at most 48 MiB for one input; the decoders with an
//! absolute bound instead are held to that bound ([`LIMITS_MB_FOR`]).
//! - [`MALLOC_LIMIT_MB`]: any single allocation of 64 MiB or more (48 MiB plus a third of
//!   headroom) fails the run at once, with the stack of that allocation.
//! - [`RSS_LIMIT_MB`]: the process's peak RSS may not pass 160 MiB, the fuzzer's own baseline
//!   (measured 60-90 MB over a run: libFuzzer, the AddressSanitizer shadow and allocator, the
//!   corpus in memory) plus the 64 MiB above, rounded up. libFuzzer checks it every second.
//! - [`QUARANTINE_MB`]: AddressSanitizer keeps freed memory in a quarantine (256 MiB by default)
//!   to catch use-after-free, and it counts in RSS: with the default every target "runs out of
//!   memory" within ~20 s on a trivial input (measured: 25 MB live, 123 MB quarantined).
//! - [`TIMEOUT_S`]: one input taking longer is a hang (libFuzzer's default waits 20 minutes).
//!
//! A parser that keeps to its factor stays far below both limits; one whose memory grows faster
//! than its input (quadratic, or a range like `n[1-4294967295]` that allocates before checking
//! a limit) trips them. libFuzzer's defaults (2,048 MB RSS, malloc limit = RSS limit) would let
//! such an input pass.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use crate::workspace;

/// The largest input libFuzzer makes: 1 MiB.
const MAX_LEN: u32 = 1 << 20;
/// Any single allocation of this many MiB or more fails the run.
const MALLOC_LIMIT_MB: u32 = 64;
/// The most the process's RSS may reach, in MiB.
const RSS_LIMIT_MB: u32 = 160;
/// AddressSanitizer's quarantine of freed memory, in MiB.
const QUARANTINE_MB: u32 = 8;
/// Seconds one input may take.
const TIMEOUT_S: u32 = 10;

/// Targets whose decoder states an absolute bound rather than a factor of its input, with the
/// malloc and RSS limits that bound needs (MiB). A tensor filled from fewer values than
/// elements may take exactly 64 MiB of heap (remote-connect's `MAX_FILLED_BYTES`), which
/// [`MALLOC_LIMIT_MB`] (any allocation of 64 MiB or more) would fail: `tensor_proto`'s malloc
/// limit is the bound plus less than 1 MiB of input. And a string tensor at the bound is a
/// million small allocations, which AddressSanitizer pads and shadows and, once freed, keeps
/// mapped, while libFuzzer checks the peak RSS; and the target holds up to three copies of the
/// tensor at once (both decoders, then the round trip). Measured: 163 MB with 37 MB live, and
/// 228 MB with 55 MB live (a string tensor of 1.1 million one-byte elements). Its RSS limit is
/// [`RSS_LIMIT_MB`] plus one and a half times the bound.
const LIMITS_MB_FOR: &[(&str, u32, u32)] = &[("tensor_proto", 65, RSS_LIMIT_MB + 96)];

/// What one target's run reported (`-print_final_stats=1`).
struct Stats {
    target: String,
    runs: String,
    peak_rss_mb: String,
}

/// Parses `[--seconds N] [TARGET...]` and runs the targets.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let (seconds, named) = match args {
        ["--seconds", n, rest @ ..] => (
            n.parse::<u32>()
                .map_err(|_| format!("--seconds takes a whole number, not {n:?}"))?,
            rest,
        ),
        rest => (60, rest),
    };
    let all = targets()?;
    let chosen: Vec<String> = if named.is_empty() {
        all
    } else {
        for name in named {
            if !all.iter().any(|t| t == name) {
                return Err(format!(
                    "no fuzz target {name:?}; the targets: {}",
                    all.join(" ")
                ));
            }
        }
        named.iter().map(|n| (*n).to_owned()).collect()
    };
    // Every target built once, then each binary run directly: a source edited during a long
    // run changes nothing in it.
    workspace::run(Command::new("cargo").args([
        "+nightly",
        "fuzz",
        "build",
        "--fuzz-dir",
        "test-support/fuzz",
    ]))?;
    let bin_dir = fuzz_dir()
        .join("target")
        .join(workspace::host_triple()?)
        .join("release");
    // Every target runs even after one fails, so a long run reports them all.
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for target in &chosen {
        match fuzz(&bin_dir, target, seconds) {
            Ok(stats) => report.push(stats),
            Err(failure) => {
                eprintln!("xtask: {failure}");
                failures.push(failure);
            }
        }
    }
    eprintln!("xtask: fuzzed {seconds} s each:");
    for s in &report {
        eprintln!(
            "xtask:   {:<16} {:>12} runs  peak RSS {:>4} MB  no failure",
            s.target, s.runs, s.peak_rss_mb
        );
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn fuzz_dir() -> PathBuf {
    workspace::root().join("test-support/fuzz")
}

/// The targets as `cargo fuzz list` reads them from `test-support/fuzz/Cargo.toml`.
fn targets() -> Result<Vec<String>, String> {
    let listed = workspace::stdout(
        Command::new("cargo")
            .args(["+nightly", "fuzz", "list"])
            .current_dir(fuzz_dir()),
    )
    .map_err(|e| format!("{e} (needs cargo-fuzz: cargo install cargo-fuzz)"))?;
    Ok(listed.lines().map(str::to_owned).collect())
}

/// Runs the built `target` in `bin_dir` for `seconds` on its corpus; libFuzzer's output
/// passes through.
fn fuzz(bin_dir: &Path, target: &str, seconds: u32) -> Result<Stats, String> {
    let dir = fuzz_dir();
    let corpus = dir.join("corpus").join(target);
    let artifacts = dir.join("artifacts").join(target);
    for d in [&corpus, &artifacts] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let (malloc_limit_mb, rss_limit_mb) = LIMITS_MB_FOR
        .iter()
        .find(|(name, ..)| *name == target)
        .map_or((MALLOC_LIMIT_MB, RSS_LIMIT_MB), |&(_, malloc, rss)| {
            (malloc, rss)
        });
    eprintln!(
        "xtask: === {target}: {seconds} s, max_len={MAX_LEN}, malloc_limit_mb={malloc_limit_mb}, \
         rss_limit_mb={rss_limit_mb}, timeout={TIMEOUT_S} s"
    );
    // detect_odr_violation=0 as cargo fuzz sets it (the Rust runtime trips it).
    let asan = match std::env::var("ASAN_OPTIONS") {
        Ok(more) if !more.is_empty() => {
            format!("quarantine_size_mb={QUARANTINE_MB}:detect_odr_violation=0:{more}")
        }
        _ => format!("quarantine_size_mb={QUARANTINE_MB}:detect_odr_violation=0"),
    };
    let started = SystemTime::now();
    let mut child = Command::new(bin_dir.join(target))
        .arg(&corpus)
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-max_len={MAX_LEN}"))
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={rss_limit_mb}"))
        .arg(format!("-malloc_limit_mb={malloc_limit_mb}"))
        .arg(format!("-timeout={TIMEOUT_S}"))
        .arg("-print_final_stats=1")
        .env("ASAN_OPTIONS", asan)
        .current_dir(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run {}: {e}", bin_dir.join(target).display()))?;
    let mut stats = Stats {
        target: target.to_owned(),
        runs: "?".into(),
        peak_rss_mb: "?".into(),
    };
    let stderr = child.stderr.take().expect("stderr is piped");
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        eprintln!("{line}");
        if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            stats.runs = n.trim().to_owned();
        } else if let Some(n) = line.strip_prefix("stat::peak_rss_mb:") {
            stats.peak_rss_mb = n.trim().to_owned();
        }
    }
    let status = child.wait().map_err(|e| format!("{target}: {e}"))?;
    if status.success() {
        return Ok(stats);
    }
    let replay = new_artifacts(&artifacts, started)
        .iter()
        .map(|a| {
            format!(
                "\n  {}\n    replay: cd fuzz && cargo +nightly fuzz run {target} {}",
                a.display(),
                a.strip_prefix(&dir).unwrap_or(a).display()
            )
        })
        .collect::<String>();
    Err(format!(
        "fuzz target {target} failed ({status}): a crash, a timeout or an out-of-memory; \
         the input libFuzzer left:{}",
        if replay.is_empty() {
            " none found (see the output above)".to_owned()
        } else {
            replay
        }
    ))
}

/// The files of `dir` written since `since` (this run's crash, timeout or OOM inputs).
fn new_artifacts(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified >= since)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}
