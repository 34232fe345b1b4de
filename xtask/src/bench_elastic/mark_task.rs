//! The task `cargo xtask bench-elastic` has both launchers start, one per agent: it marks the
//! moment it started (the wall clock, which every process of the machine shares) as
//! `NS ROUND` in the file `DIR/PID` (through a rename, so no reader sees half of it), then
//! sleeps until it is killed (300 s at most, so a lost one still ends).
//!
//! Not a module of xtask: `mark.rs` compiles it alone with `rustc -O`, std only, into a small
//! binary that starts about as fast as a program can here (a millisecond of CPU); a debug
//! build of xtask itself took twice that, which 64 tasks on 2 cores would show.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: mark-task DIR");
        std::process::exit(2);
    };
    // Ours: the round; torchrun's: the restarts of this agent (it counts per agent).
    let round = ["TFCLUSTER_ROUND", "TORCHELASTIC_RESTART_COUNT"]
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .unwrap_or_default();
    let pid = std::process::id();
    let dir = Path::new(&dir);
    let partial = dir.join(format!(".{pid}"));
    let written = std::fs::write(&partial, format!("{ns} {round}\n"))
        .and_then(|()| std::fs::rename(&partial, dir.join(pid.to_string())));
    if let Err(e) = written {
        eprintln!("mark-task: cannot write its mark in {}: {e}", dir.display());
        std::process::exit(1);
    }
    std::thread::sleep(Duration::from_secs(300));
}
