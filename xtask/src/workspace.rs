//! Where the workspace is, and running a command in it with a clear error.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The workspace root: the parent of this crate's directory.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Where cargo builds: `CARGO_TARGET_DIR`, else the workspace's `target/`.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// The target directories, under `target/beside/`, of the builds that share nothing with the
/// tests' (other feature sets, nightly docs, the packaged copies, the static musl binary, the
/// wheel), which the test command runs beside its tests ([`crate::beside`]): none waits on
/// cargo's lock of the tests' directory, and a suite that builds again what was built beside
/// waits for that build alone, never for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Beside {
    /// The checks: each feature set's clippy, the docs, the public-API listings, the packages.
    Checks,
    /// The CLI with its default features, static for musl ([`crate::static_cli`]): the
    /// image's, the test wheel's (with the wheel's module) and README's `cargo run`'s.
    Cli,
    /// The tests run without default features.
    WithoutFeatures,
}

impl Beside {
    /// The directory.
    pub(crate) fn dir(self) -> PathBuf {
        let name = match self {
            Self::Checks => "checks",
            Self::Cli => "cli",
            Self::WithoutFeatures => "no-default-features",
        };
        target_dir().join("beside").join(name)
    }

    /// `cargo`, building in [`Self::dir`] ([`Self::building_in`]).
    pub(crate) fn cargo(self) -> Command {
        let mut cargo = Command::new("cargo");
        self.building_in(&mut cargo);
        cargo
    }

    /// Makes every cargo `command` starts (itself, or a `pip wheel` through maturin) build in
    /// [`Self::dir`]; and, for the builds made once per run (not the checks'), without
    /// incremental compilation, whose bookkeeping only pays when the crate is compiled again
    /// after an edit: the CLI's build took 13% less CPU time without it (352 CPU-seconds
    /// against 404). Everything that builds in one directory goes through here, as cargo
    /// compiles the workspace's crates again when the setting changes; and so, from the tests'
    /// thread, tells [`crate::beside::wait_for`] that the tests will wait on cargo's lock of
    /// the directory.
    pub(crate) fn building_in(self, command: &mut Command) -> &mut Command {
        crate::beside::wait_for(self);
        command.env("CARGO_TARGET_DIR", self.dir());
        match self {
            Self::Checks => command,
            Self::Cli | Self::WithoutFeatures => command.env("CARGO_INCREMENTAL", "0"),
        }
    }
}

/// Fails, saying how to install one, when rustup has no nightly toolchain, which `what`
/// needs: a machine without one fails rather than passing unchecked.
pub(crate) fn require_nightly(what: &str) -> Result<(), String> {
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if nightly {
        Ok(())
    } else {
        Err(format!(
            "{what} needs a nightly toolchain, and rustup has none: \
             `rustup toolchain install nightly --profile minimal`"
        ))
    }
}

/// Runs `command` from the workspace root; an error names the command and its exit status.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    let shown = started(command);
    let status = command.status();
    finished(&shown, status)
}

/// `cargo build --release` of `targets` (packages, binaries, examples), from the workspace
/// root: what a benchmark runs as processes.
pub(crate) fn build_release(targets: &[&str]) -> Result<(), String> {
    run(Command::new("cargo")
        .args(["build", "--release"])
        .args(targets))
}

/// As [`run`], with the command's stdout and stderr merged into one stream in the order they
/// were written (as a terminal shows them), echoed to stdout as it comes and returned with
/// whether the command succeeded. An error only when it could not run at all.
pub(crate) fn run_merged(command: &mut Command) -> Result<(String, bool), String> {
    merged(command, true)
}

/// As [`run_merged`], echoing nothing: for a command run beside another whose output is
/// shown as it comes, its own shown once it is over.
pub(crate) fn run_captured(command: &mut Command) -> Result<(String, bool), String> {
    merged(command, false)
}

fn merged(command: &mut Command, echo: bool) -> Result<(String, bool), String> {
    let shown = started(command);
    let (reader, writer) =
        std::io::pipe().map_err(|e| format!("cannot make a pipe for {shown}: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot make a pipe for {shown}: {e}"))?;
    let mut child = command
        .stdout(writer)
        .stderr(writer2)
        .spawn()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    // The command holds the pipe's write ends; they must go for the reader to see its end.
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut text = String::new();
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("reading the output of {shown}: {e}")),
        }
        // A test may print bytes that are not UTF-8; they are shown, not judged.
        let line = String::from_utf8_lossy(&line);
        if echo {
            print!("{line}");
        }
        text.push_str(&line);
    }
    let succeeded = finished(&shown, child.wait()).is_ok();
    Ok((text, succeeded))
}

/// What `command` prints on stdout, run from the workspace root unless it has a directory;
/// an error names the command and what it said on stderr.
pub(crate) fn stdout(command: &mut Command) -> Result<String, String> {
    let shown = at_root(command);
    let output = command
        .output()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("{shown} printed no UTF-8: {e}"))
}

/// The host's target triple, as nightly rustc names it (cargo-fuzz's output directory names
/// it; `--target` it builds for the host with the host's units apart).
pub(crate) fn host_triple() -> Result<String, String> {
    stdout(Command::new("rustc").args(["+nightly", "-vV"]))?
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| "rustc +nightly -vV names no host".to_owned())
}

/// The JSON `command` prints (`cargo metadata`, a `--unit-graph`), as [`stdout`].
pub(crate) fn json(command: &mut Command) -> Result<serde_json::Value, String> {
    let text = stdout(command)?;
    serde_json::from_str(&text).map_err(|e| format!("{command:?} printed no JSON: {e}"))
}

/// Sets the workspace root as the directory of `command` (unless it has one), says it runs, and returns how it
/// is shown.
pub(crate) fn started(command: &mut Command) -> String {
    let shown = at_root(command);
    eprintln!("xtask: running {shown}");
    shown
}

/// Sets the workspace root as the directory of `command` unless it has one; returns how it
/// is shown.
fn at_root(command: &mut Command) -> String {
    if command.get_current_dir().is_none() {
        command.current_dir(root());
    }
    format!("{command:?}")
}

fn finished(shown: &str, status: std::io::Result<ExitStatus>) -> Result<(), String> {
    let status = status.map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed: {status}"))
    }
}
