//! Running one block: `bash -e` with the block's text, in its scene's directory, on one or
//! several hosts at once, each in a process group of its own so that what it leaves running
//! (servers started with `&`) is stopped with it; its output kept for the checks.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::example::{DEFAULT_DEADLINE, Example, IN_CHECKOUT_DEADLINE};
use super::hosts::Named;
use super::scene::Tools;
use crate::{static_cli, workspace};

/// How much of a failed block's output a failure shows.
const TAIL: usize = 3000;

/// What runs: the block, or a server beside it that the run stops once the blocks have ended.
#[derive(Debug)]
pub(crate) struct Run {
    command: Command,
    serves: bool,
}

/// The block run by `bash` (here, or a `bash` on another host with its environment).
pub(crate) fn by(mut command: Command, example: &Example, dir: &Path, tools: &Tools) -> Run {
    shell(&mut command, &example.filled(), example, dir, tools);
    Run {
        command,
        serves: false,
    }
}

/// The block run inside host `i`, called `name`, or what its annotation runs `on` it instead.
pub(crate) fn in_host(
    example: &Example,
    dir: &Path,
    tools: &Tools,
    hosts: &Named,
    (i, name): (usize, &str),
) -> Run {
    let mut command = hosts.hosts().command(i, "bash");
    let server = example.on.iter().find(|(host, _)| host == name);
    let text = match server {
        Some((_, server)) => server.clone(),
        None => example.filled(),
    };
    shell(&mut command, &text, example, dir, tools);
    Run {
        command,
        serves: server.is_some(),
    }
}

fn shell(command: &mut Command, text: &str, example: &Example, dir: &Path, tools: &Tools) {
    command
        .args(["-e", "-c", text])
        .current_dir(if example.in_checkout {
            workspace::root()
        } else {
            dir.to_path_buf()
        })
        .env("PATH", tools.path())
        .stdin(Stdio::null());
    if example.in_checkout {
        // README's `cargo run -p tfcluster` builds the CLI with its default features, as the
        // image's and the wheel's build does beside the tests: built as that one is, it finds
        // the work done (or waits for it) instead of doing it again.
        static_cli::cargo_builds_it(command);
    }
}

/// Runs `commands` at once and returns their output (each host's after a `== host N ==`
/// line): every one must exit 0 before the deadline, or, for a block that `runs`, not fail
/// before it is stopped then (or once it has printed every text it `expects`).
pub(crate) fn run(example: &Example, runs: Vec<Run>) -> Result<String, String> {
    let mut running: Vec<(Child, PathBuf)> = Vec::new();
    let mut servers = Vec::new();
    let dir = std::env::temp_dir();
    let mut outcome = Ok(());
    for (i, Run { command, serves }) in runs.into_iter().enumerate() {
        let log = dir.join(format!("tfcluster-guide-{}-{i}.log", std::process::id()));
        match spawn(command, &log) {
            Ok(child) => {
                if serves {
                    servers.push(i);
                }
                running.push((child, log));
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let deadline = example.runs.unwrap_or(if example.in_checkout {
        IN_CHECKOUT_DEADLINE
    } else {
        DEFAULT_DEADLINE
    });
    let started = Instant::now();
    let mut left: Vec<usize> = (0..running.len()).collect();
    let mut polls = 0_u32;
    // Done once every block has ended; a server that fails first fails the run.
    while outcome.is_ok() && left.iter().any(|i| !servers.contains(i)) {
        if started.elapsed() > deadline {
            if example.runs.is_none() {
                outcome = Err(format!("it did not finish within {deadline:?}"));
            }
            break;
        }
        let mut still = Vec::new();
        for i in left {
            match running[i].0.try_wait() {
                // A server may end on its own (a job beside the block that completes).
                Ok(Some(status)) if servers.contains(&i) && !status.success() => {
                    outcome = Err(format!("the server beside the block ended with {status}"));
                }
                Ok(Some(status)) if status.success() => {}
                Ok(Some(status)) => {
                    outcome = Err(format!("bash -e ended with {status}"));
                }
                Ok(None) => still.push(i),
                Err(e) => outcome = Err(format!("cannot wait for bash: {e}")),
            }
        }
        left = still;
        // A block that runs on is done once it has printed all it promises.
        if example.runs.is_some() && !example.expects.is_empty() && polls.is_multiple_of(10) {
            let output = read(&running);
            if example.expects.iter().all(|e| output.contains(e.as_str())) {
                break;
            }
        }
        polls += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    for (child, _) in &mut running {
        stop(child);
    }
    let output = read(&running);
    for (_, log) in &running {
        let _ = std::fs::remove_file(log);
    }
    match outcome {
        Ok(()) => Ok(output),
        Err(e) => Err(format!("{e}; its output:\n{}", tail(&output))),
    }
}

/// What the commands printed so far, each host's after a `== host N ==` line.
fn read(running: &[(Child, PathBuf)]) -> String {
    let mut output = String::new();
    for (i, (_, log)) in running.iter().enumerate() {
        if running.len() > 1 {
            output.push_str(&format!("== host {i} ==\n"));
        }
        output.push_str(&std::fs::read_to_string(log).unwrap_or_default());
    }
    output
}

/// Starts `command` in a process group of its own, its output (both streams) into `log`.
fn spawn(mut command: Command, log: &Path) -> Result<Child, String> {
    let file = File::create(log).map_err(|e| format!("cannot make {}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    command
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))
}

/// Stops the block's process group: SIGTERM, as Ctrl-C's graceful end, then SIGKILL for what
/// is left after a few seconds.
fn stop(child: &mut Child) {
    let Ok(id) = i32::try_from(child.id()) else {
        return;
    };
    let group = Pid::from_raw(id);
    if killpg(group, Signal::SIGTERM).is_err() {
        let _ = child.wait();
        return;
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        // The group is gone once no process of it is left (ESRCH).
        if killpg(group, None).is_err() {
            break;
        }
        let _ = child.try_wait();
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = killpg(group, Signal::SIGKILL);
    let _ = child.wait();
}

/// The last part of `output`, for a failure's message.
pub(crate) fn tail(output: &str) -> &str {
    let mut start = output.len().saturating_sub(TAIL);
    while !output.is_char_boundary(start) {
        start += 1;
    }
    &output[start..]
}
