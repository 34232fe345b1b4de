//! Where the workspace is, and running a command in it with a clear error.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root: the parent of this crate's directory.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Runs `command` from the workspace root; an error names the command and its exit status.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    command.current_dir(root());
    let shown = format!("{command:?}");
    eprintln!("xtask: running {shown}");
    let status = command
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed: {status}"))
    }
}
