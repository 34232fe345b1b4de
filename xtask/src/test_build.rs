//! The tests' build (`cargo test --workspace --all-features --no-run`, with the cargo running
//! this task, so `CARGO_TARGET_DIR` and any configured target directory are honoured) and the
//! executables it made: the `tfcluster` the guide, Slurm and Kubernetes suites run, the
//! resolver example Slurm's ranks run, and test binaries run on their own (the host jobs, the
//! interop tests). Any other selection builds them again: `cargo test --test NAME` turns on
//! only that package's dev-dependencies' features, and `cargo build -p` only that package's.
//!
//! The test command makes it its clippy check as well ([`build_linted`]): every target, the
//! workspace's crates compiled by `clippy-driver` with warnings denied, as `cargo clippy
//! --workspace --all-targets --all-features -- -D warnings` checks them. The two apart
//! compiled the workspace's crates twice and every dependency's metadata once more: 794
//! CPU-seconds against 623 for the one build.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::workspace;

/// The tests' build, made once a run of xtask: whether it was linted, how its command is
/// shown, and cargo's `compiler-artifact` messages.
struct Build {
    linted: bool,
    outcome: Result<(String, Vec<Value>), String>,
}

static BUILT: OnceLock<Build> = OnceLock::new();

/// Makes the tests' build as the test command's clippy check: every target, the workspace's
/// crates through `clippy-driver`, warnings denied. First in a run, or it fails: a build made
/// without clippy before would leave the check undone.
pub(crate) fn build_linted() -> Result<(), String> {
    let built = BUILT.get_or_init(|| Build {
        linted: true,
        outcome: build(true),
    });
    if !built.linted {
        return Err("the tests' build was made without clippy before its clippy check".to_owned());
    }
    built.outcome.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Makes cargo `command` build as the tests' build did, so it finds that build's crates
/// compiled: through `clippy-driver` when the build was linted (cargo compiles the
/// workspace's crates again when the wrapper changes).
pub(crate) fn as_built(command: &mut Command) -> Result<&mut Command, String> {
    if BUILT.get().is_some_and(|built| built.linted) {
        through_clippy(command)
    } else {
        Ok(command)
    }
}

/// Builds the workspace's tests as `cargo test --workspace --all-features` does, and returns
/// the executable of target `name` (`kind`: `bin`, `example` or `test`) of `package`. The build
/// and its list of executables are made once a run of xtask: every suite after asks again.
pub(crate) fn artifact(package: &str, kind: &str, name: &str) -> Result<PathBuf, String> {
    let built = BUILT.get_or_init(|| Build {
        linted: false,
        outcome: build(false),
    });
    let (shown, artifacts) = built.outcome.as_ref().map_err(Clone::clone)?;
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

/// The tests' build, `linted` or not: how the command is shown, and cargo's
/// `compiler-artifact` messages.
fn build(linted: bool) -> Result<(String, Vec<Value>), String> {
    let built = compile(&mut no_run(linted)?)?;
    if linted {
        // The benches, which `cargo clippy --all-targets` checks and `cargo test` leaves out;
        // not `--all-targets` in the one run, which builds the examples as tests instead of
        // the binaries the suites run.
        compile(no_run(linted)?.arg("--benches"))?;
    }
    Ok(built)
}

/// `cargo test --workspace --all-features --no-run`, through clippy when `linted`.
fn no_run(linted: bool) -> Result<Command, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["test", "--workspace", "--all-features", "--no-run"]);
    if linted {
        through_clippy(&mut command)?;
    }
    Ok(command)
}

/// Runs cargo build `command`: how it is shown, and its `compiler-artifact` messages.
fn compile(command: &mut Command) -> Result<(String, Vec<Value>), String> {
    command
        .arg("--message-format=json-render-diagnostics")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let shown = workspace::started(command);
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

/// Makes cargo `command` compile the workspace's crates with `clippy-driver`, warnings
/// denied, as `cargo clippy -- -D warnings` does (the same two variables; dependencies are
/// compiled by rustc, their lints capped). The driver is the toolchain's, beside its `rustc`.
fn through_clippy(command: &mut Command) -> Result<&mut Command, String> {
    static DRIVER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let driver = DRIVER.get_or_init(|| {
        let output = Command::new("rustc")
            .args(["--print", "sysroot"])
            .current_dir(workspace::root())
            .output()
            .map_err(|e| format!("cannot run rustc --print sysroot: {e}"))?;
        let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let driver = Path::new(&sysroot).join("bin/clippy-driver");
        if driver.is_file() {
            Ok(driver)
        } else {
            Err(format!(
                "no clippy-driver at {} (rustc's sysroot): `rustup component add clippy`",
                driver.display()
            ))
        }
    });
    let driver = driver.as_ref().map_err(Clone::clone)?;
    Ok(command.env("RUSTC_WORKSPACE_WRAPPER", driver).env(
        "CLIPPY_ARGS",
        "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
    ))
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
