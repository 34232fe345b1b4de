//! The one command `run` starts without `--local`: in a process group of its own (the
//! supervisor's [`spawn_group`]), with our errors.

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
    supervise::command(argv).map_err(|e| Failure::Input(e.to_string()))
}

/// Starts `command` as the leader of a new process group.
pub(crate) fn start(mut command: Command) -> Result<Started, Failure> {
    let (child, group) = spawn_group(&mut command).map_err(|e| {
        let program = command.as_std().get_program().to_string_lossy();
        Failure::Input(format!("cannot run {program}: {e}"))
    })?;
    Ok(Started { child, group })
}
