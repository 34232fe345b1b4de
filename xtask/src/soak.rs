//! `cargo xtask soak [CYCLES]`: the long robustness runs kept out of the test command. Runs the
//! `soak` example (release build): CYCLES (10,000) connect/close cycles against task servers in
//! one process, and fails if a context is left on a server or resident memory grows between
//! the middle and the end of the run by more than [`GROWTH_LIMIT`] (it must stay flat once
//! warm).

use std::process::Command;

use serde_json::Value;

use crate::workspace;

/// The most resident memory may grow over the second half of the cycles, in MB.
const GROWTH_LIMIT: f64 = 2.0;

pub(crate) fn run(cycles: Option<&str>) -> Result<(), String> {
    let cycles = cycles.unwrap_or("10000");
    let mut command = Command::new("cargo");
    command
        .current_dir(workspace::root())
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "remote-connect",
            "--example",
            "soak",
            "--",
        ])
        .arg(cycles);
    eprintln!("xtask: running {command:?}");
    let output = command
        .output()
        .map_err(|e| format!("cannot run the soak: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "the soak failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let result: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("the soak printed no result ({e}): {stdout}"))?;
    let rss: Vec<f64> = result["rss_mb"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    println!(
        "soak: {} connect/close cycles in {} s; resident memory {:.1} MB at 0, {:.1} MB at half, {:.1} MB at the end; contexts left on servers: {}",
        result["cycles"],
        result["seconds"],
        rss.first().copied().unwrap_or(0.0),
        rss.get(1).copied().unwrap_or(0.0),
        rss.get(2).copied().unwrap_or(0.0),
        result["contexts_left"]
    );
    if result["contexts_left"] != 0 {
        return Err("contexts were left on the servers".into());
    }
    match rss.as_slice() {
        [_, half, end] if end - half <= GROWTH_LIMIT => Ok(()),
        [_, half, end] => Err(format!(
            "resident memory grew by {:.1} MB over the second half (limit {GROWTH_LIMIT} MB)",
            end - half
        )),
        _ => Err(format!("no memory figures in {result}")),
    }
}
