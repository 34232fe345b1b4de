//! [`Warm`]: one warm interpreter: started with its imports, watched until it is ready, and
//! handed its round's environment.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::watch;

use super::{BOOTSTRAP, PythonCommand};
use crate::supervise::{Piped, Signal, SpawnError, spawn_piped};

/// How long the handoff's write may take: a line into a socket's buffer, so at once.
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(1);

/// A warm interpreter waiting for its round; dropped, it is killed.
#[derive(Debug)]
pub(crate) struct Warm {
    /// `None` once handed over.
    process: Option<Piped>,
    /// Its stdin: the round's environment goes there.
    handoff: OwnedWriteHalf,
    imported: Imported,
}

/// Whether a warm interpreter has done its imports (or failed them, or ended).
#[derive(Debug, Clone)]
pub(crate) struct Imported(watch::Receiver<bool>);

impl Imported {
    /// Resolves once the imports are done, failed, or the interpreter ended.
    pub(crate) async fn done(mut self) {
        let _ = self.0.wait_for(|&done| done).await;
    }

    /// Whether the imports are done (or failed, or the interpreter ended) already.
    pub(crate) fn is_done(&self) -> bool {
        *self.0.borrow()
    }
}

impl Warm {
    /// Starts `python`'s interpreter importing `modules` for local task `local`, with `env`
    /// added to the agent's environment less `TF_CONFIG`. The first to report that a module
    /// does not import sets `failed` and logs a warning.
    pub(crate) fn spawn(
        python: &PythonCommand,
        modules: &[String],
        env: &[(String, String)],
        local: u32,
        failed: Arc<AtomicBool>,
    ) -> Result<Self, SpawnError> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(SpawnError::Pipe)?;
        let mut command = python.interpreter();
        command
            .args(["-c", BOOTSTRAP, "warm", &modules.join(",")])
            .args(&python.target)
            .env_remove("TF_CONFIG")
            .envs(env.iter().cloned())
            .stdin(Stdio::from(OwnedFd::from(theirs)));
        let process = spawn_piped(&mut command, &python.program)?;
        // The command holds the interpreter's end of the socket: gone, ours sees its close.
        drop(command);
        ours.set_nonblocking(true).map_err(SpawnError::Pipe)?;
        let (read, handoff) = UnixStream::from_std(ours)
            .map_err(SpawnError::Pipe)?
            .into_split();
        let (done, imported) = watch::channel(false);
        tokio::spawn(watch_ready(read, process.pid(), local, failed, done));
        Ok(Self {
            process: Some(process),
            handoff,
            imported: Imported(imported),
        })
    }

    /// Hands the interpreter its round's `env`: it is the task's process from then on, and
    /// [`Imported`] says when its imports are done. One that exited, or that cannot be
    /// written to, is killed and the reason returned.
    pub(crate) async fn hand_over(
        mut self,
        env: &[(String, String)],
    ) -> Result<(Piped, Imported), String> {
        if let Some(status) = self.process.as_mut().and_then(Piped::exited) {
            return Err(format!("it exited ({status})"));
        }
        let line = format!("{}\n", handoff_message(env));
        match tokio::time::timeout(HANDOFF_TIMEOUT, self.handoff.write_all(line.as_bytes())).await {
            Ok(Ok(())) => match self.process.take() {
                Some(process) => Ok((process, self.imported.clone())),
                None => Err("it was handed over already".to_owned()),
            },
            Ok(Err(e)) => Err(format!("cannot write to it ({e})")),
            Err(_) => Err(format!(
                "it did not take its round within {HANDOFF_TIMEOUT:?}"
            )),
        }
    }
}

impl Drop for Warm {
    /// A spare interpreter ends with its owner (the agent's pool).
    fn drop(&mut self) {
        if let Some(process) = &self.process {
            process.group().signal(Signal::SIGKILL);
        }
    }
}

/// The line that hands a warm interpreter its round: `{"env": {NAME: VALUE, ...}}`, less
/// the withheld variables (a task started cold does not get them either).
pub(crate) fn handoff_message(env: &[(String, String)]) -> serde_json::Value {
    let env: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .filter(|(name, _)| !crate::withheld_env::is_withheld(name))
        .map(|(name, value)| (name.clone(), value.clone().into()))
        .collect();
    serde_json::json!({ "env": env })
}

/// Waits for the interpreter's one report: ready (logged with its resident memory), or a
/// module that does not import (a warning, once for the agent, and `failed` set).
async fn watch_ready(
    read: OwnedReadHalf,
    pid: Option<u32>,
    local: u32,
    failed: Arc<AtomicBool>,
    done: watch::Sender<bool>,
) {
    let started = Instant::now();
    let mut line = String::new();
    if !matches!(BufReader::new(read).read_line(&mut line).await, Ok(1..)) {
        return;
    }
    let report: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
    if let Some(module) = report["failed"].as_str() {
        if !failed.swap(true, Ordering::Relaxed) {
            let error = report["error"].as_str().unwrap_or_default();
            tracing::warn!(
                module,
                error,
                "cannot prewarm: the module does not import; tasks start cold"
            );
        }
    } else {
        tracing::info!(
            local_task = local,
            pid,
            import_ms = started.elapsed().as_millis() as u64,
            rss_mb = pid.and_then(rss_mb),
            "warm interpreter ready"
        );
    }
    let _ = done.send(true);
}

/// Process `pid`'s resident memory in MB (`VmRSS` of `/proc/PID/status`).
fn rss_mb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
