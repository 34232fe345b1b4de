//! The task `cargo xtask bench-elastic` has both launchers start, one per agent: it marks the
//! moment it started (the wall clock, which every process of the machine shares) as
//! `NS ROUND` in the file `DIR/PID` (through a rename, so no reader sees half of it), then
//! sleeps until it is killed (300 s at most, so a lost one still ends).
//!
//! Under our launcher it also binds its own address of `TF_CONFIG`, as a TensorFlow server
//! does once it starts, and holds it while it sleeps: the agent releases a task's reserved
//! port just before the task starts, and a task that left it free would let another agent's
//! reservation for the next round take a port this node still holds at the rendezvous, which
//! refuses that agent's join (TensorFlow's tasks would hold it). A bind that fails is only
//! reported: the mark is what counts.
//!
//! Not a module of xtask: `mark.rs` compiles it alone with `rustc -O`, std only, into a small
//! binary that starts about as fast as a program can here (a millisecond of CPU); a debug
//! build of xtask itself took twice that, which 64 tasks on 2 cores would show.

use std::net::TcpListener;
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
    let _held = std::env::var("TF_CONFIG").ok().and_then(|config| {
        let port = own_port(&config)?;
        TcpListener::bind(("0.0.0.0", port))
            .map_err(|e| eprintln!("mark-task: cannot bind port {port}: {e}"))
            .ok()
    });
    std::thread::sleep(Duration::from_secs(300));
}

/// This task's port in `TF_CONFIG` (`{"cluster":{JOB:["HOST:PORT",...],...},"task":{"type":
/// JOB,"index":I},...}`, as tfcluster writes it), read without a JSON library.
fn own_port(config: &str) -> Option<u16> {
    let config: String = config.chars().filter(|c| !c.is_whitespace()).collect();
    let after = |key: &str| config.split_once(key).map(|(_, rest)| rest);
    let task = after("\"task\":")?;
    let job = task.split_once("\"type\":\"")?.1.split('"').next()?;
    let index: usize = task
        .split_once("\"index\":")?
        .1
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let list = after(&format!("\"{job}\":["))?.split(']').next()?;
    let address = list.split(',').nth(index)?.trim_matches('"');
    address.rsplit_once(':')?.1.parse().ok()
}
