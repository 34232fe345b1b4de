//! `run` without `--local` or `--rdzv`: this process's task, found from a `--from` source,
//! and the one command started with its TF_CONFIG, in a process group of its own (the
//! supervisor's [`spawn_group`]), with our errors.

use anyhow::Context as _;
use launcher::supervise::{self, Group, exit_code, spawn_group};
use tokio::process::{Child, Command};

use crate::args::source::{SourceArgs, SourceKind};
use crate::failure::Failure;
use crate::identity::identify;
use crate::stop_signal::Stop;

/// The environment of this process's task, as `from` finds it: TF_CONFIG (and
/// CUDA_VISIBLE_DEVICES where the source decides it), for `job` and `task` where given
/// instead of the source's.
pub(crate) async fn task_env(
    from: SourceKind,
    source: &SourceArgs,
    job: Option<String>,
    task: Option<u32>,
) -> Result<Vec<(String, String)>, Failure> {
    let mut found = identify(from, source, None).await?;
    if job.is_some() {
        found.task_type = job;
    }
    if task.is_some() {
        found.task_id = task;
    }
    Ok(found
        .env()?
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect())
}

/// Runs `command` with `env` added, passing SIGINT and SIGTERM on, and ends with its status.
pub(crate) async fn run(command: &[String], env: Vec<(String, String)>) -> Result<(), Failure> {
    let mut process = supervise::command(command)?;
    process.envs(env);
    let mut signals = Stop::install();
    let started = start(process)?;
    let mut child = started.child;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            signal = signals.next() => started.group.signal(signal),
        }
    }
    .with_context(|| format!("cannot wait for {}", command[0]))?;
    match exit_code(status) {
        0 => Ok(()),
        // The command reported for itself.
        code => Err(Failure::code(code)),
    }
}

/// A started command and its process group.
struct Started {
    child: Child,
    group: Group,
}

/// Starts `command` as the leader of a new process group.
fn start(mut command: Command) -> Result<Started, Failure> {
    let (child, group) = spawn_group(&mut command).with_context(|| {
        let program = command.as_std().get_program().to_string_lossy();
        format!("cannot run {program}")
    })?;
    Ok(Started { child, group })
}
