//! The one command `run` starts without `--local`: in a process group of its own (the
//! supervisor's [`spawn_group`]), with our errors.

use anyhow::Context as _;
use elastic::supervise::{self, Group, spawn_group};
use tokio::process::{Child, Command};

use crate::args::Failure;

pub(crate) use elastic::supervise::exit_code;

/// A started command and its process group.
pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) group: Group,
}

/// `argv`, a program and its arguments, as a command to start.
pub(crate) fn command(argv: &[String]) -> Result<Command, Failure> {
    Ok(supervise::command(argv)?)
}

/// Starts `command` as the leader of a new process group.
pub(crate) fn start(mut command: Command) -> Result<Started, Failure> {
    let (child, group) = spawn_group(&mut command).with_context(|| {
        let program = command.as_std().get_program().to_string_lossy();
        format!("cannot run {program}")
    })?;
    Ok(Started { child, group })
}
