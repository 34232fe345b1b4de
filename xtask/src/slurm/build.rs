//! Building the programs the ranks run, with the cargo running this task (so
//! `CARGO_TARGET_DIR` and any configured target directory are honoured).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::workspace;

/// Builds the workspace's tests as `cargo test --workspace --all-features` does, and returns
/// the executable of target `name` (`kind`: `bin` or `example`) of `package`. The tests' own
/// build, not another: a `cargo build -p` of one package resolves other features, which
/// compiled it and much of what it depends on a second time.
pub(crate) fn artifact(package: &str, kind: &str, name: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["test", "--workspace", "--all-features", "--no-run"])
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
        .filter(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == name
                && m["target"]["kind"][0] == kind
                && m["profile"]["test"] == false
                && m["package_id"].as_str().is_some_and(|id| of(id, package))
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("{shown} reported no executable for {kind} {name} of {package}"))
}

/// Whether cargo's package ID `id` is `package`'s: `path+file:///…/DIR#NAME@VERSION`, or
/// `…/NAME#VERSION` when the directory is named as the package.
fn of(id: &str, package: &str) -> bool {
    let Some((path, rest)) = id.rsplit_once('#') else {
        return false;
    };
    match rest.split_once('@') {
        Some((name, _)) => name == package,
        None => path.rsplit('/').next() == Some(package),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn package_ids_name_their_package_either_way() {
        assert!(super::of("path+file:///w/tfcluster#0.1.0", "tfcluster"));
        assert!(super::of(
            "path+file:///w/elastic#tfcluster-elastic@0.1.0",
            "tfcluster-elastic"
        ));
        assert!(!super::of(
            "path+file:///w/elastic#tfcluster-elastic@0.1.0",
            "elastic"
        ));
        assert!(!super::of("path+file:///w/tfcluster#0.1.0", "cluster-spec"));
    }
}
