//! The tests' build (`cargo test --workspace --all-features --no-run`, with the cargo running
//! this task, so `CARGO_TARGET_DIR` and any configured target directory are honoured) and the
//! executables it made: the `tfcluster` the guide, Slurm and Kubernetes suites run, the
//! resolver example Slurm's ranks run, and test binaries run on their own (the host jobs, the
//! interop tests). Any other selection builds them again: `cargo test --test NAME` turns on
//! only that package's dev-dependencies' features, and `cargo build -p` only that package's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::workspace;

/// Builds the workspace's tests as `cargo test --workspace --all-features` does, and returns
/// the executable of target `name` (`kind`: `bin`, `example` or `test`) of `package`. The build
/// and its list of executables are made once a run of xtask: every suite after asks again.
pub(crate) fn artifact(package: &str, kind: &str, name: &str) -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<(String, Vec<Value>), String>> = OnceLock::new();
    let (shown, artifacts) = BUILT.get_or_init(build).as_ref().map_err(Clone::clone)?;
    artifacts
        .iter()
        .filter(|m| {
            m["target"]["name"] == name
                && m["target"]["kind"][0] == kind
                // A binary's own unit tests are a `bin` target built as a test.
                && m["profile"]["test"] == (kind == "test")
                && m["package_id"].as_str().is_some_and(|id| of(id, package))
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("{shown} reported no executable for {kind} {name} of {package}"))
}

/// The tests' build: how the command is shown, and cargo's `compiler-artifact` messages.
fn build() -> Result<(String, Vec<Value>), String> {
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
    let artifacts = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .collect();
    Ok((shown, artifacts))
}

/// Runs test binary `binary` of the package in directory `package_dir` with libtest's
/// `args`, as `cargo test` would (from the package's directory, finding TensorFlow at
/// `python`), its output captured; returns the output under the `Running` line cargo would
/// print for it ([`crate::tally::cargo_suites`] reads the suite's name there) and whether it
/// passed.
pub(crate) fn run_test(
    binary: &Path,
    package_dir: &str,
    python: &Path,
    args: &[String],
) -> Result<(String, bool), String> {
    let name = binary
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rsplit_once('-'))
        .map_or("?", |(name, _hash)| name);
    let (output, succeeded) = workspace::run_captured(
        Command::new(binary)
            .args(args)
            .current_dir(workspace::root().join(package_dir))
            .env("TFCLUSTER_PYTHON", python),
    )?;
    Ok((
        format!(
            "     Running tests/{name}.rs ({})\n{output}",
            binary.display()
        ),
        succeeded,
    ))
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
