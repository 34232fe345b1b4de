//! Building the programs the ranks run, with the cargo running this task (so
//! `CARGO_TARGET_DIR` and any configured target directory are honoured).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::workspace;

/// Builds target `name` of `package` (`kind` is `--example` or `--bin`) and returns the
/// executable cargo reports.
pub(crate) fn artifact(package: &str, kind: &str, name: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--package", package, kind, name])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(workspace::root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{shown} failed: {}", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("{shown} reported no executable for {name}"))
}
