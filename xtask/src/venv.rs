//! Python virtual environments under `target/` that hold a peer to compare with or test
//! against (TensorFlow for the tests, torch for `bench-elastic`): made when missing, their
//! packages installed with pip, checked by importing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workspace;

/// A venv at `target/NAME` whose python passes `check`.
pub(crate) struct Venv<'a> {
    /// Its directory under `target/`.
    pub(crate) name: &'a str,
    /// Python code that exits 0 when the venv has what it is for.
    pub(crate) check: &'a str,
}

impl Venv<'_> {
    /// Its python (which may not exist yet).
    pub(crate) fn python(&self) -> PathBuf {
        workspace::root()
            .join("target")
            .join(self.name)
            .join("bin/python")
    }

    /// Whether `python` passes the check.
    pub(crate) fn ready(&self, python: &Path) -> bool {
        passes(python, self.check)
    }

    /// Makes the venv when it is missing or fails the check: each of `installs` (pip install
    /// arguments) is tried in turn until the check passes. Returns its python, or why not,
    /// with each try's failure.
    pub(crate) fn ensure(&self, installs: &[&[&str]]) -> Result<PathBuf, String> {
        self.ensure_from("python3", installs)
    }

    /// As [`ensure`](Self::ensure), the venv made by interpreter `base` (`python3.12`).
    pub(crate) fn ensure_from(&self, base: &str, installs: &[&[&str]]) -> Result<PathBuf, String> {
        let python = self.python();
        if self.ready(&python) {
            return Ok(python);
        }
        let dir = python
            .parent()
            .and_then(Path::parent)
            .expect("bin/python sits in the venv");
        workspace::run(Command::new(base).args(["-m", "venv", "--clear"]).arg(dir))?;
        let mut failures = Vec::new();
        for install in installs {
            let tried = workspace::run(pip(&python, "install").args(*install));
            match tried {
                Ok(()) if self.ready(&python) => return Ok(python),
                Ok(()) => failures.push(format!(
                    "pip install {} succeeded but the check failed",
                    install.join(" ")
                )),
                Err(e) => failures.push(e),
            }
        }
        Err(format!(
            "{} is not ready: {}",
            dir.display(),
            failures.join("; ")
        ))
    }
}

/// Whether `python -c check` exits 0 (TensorFlow's logs quiet).
pub(crate) fn passes(python: &Path, check: &str) -> bool {
    Command::new(python)
        .args(["-c", check])
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A command running the venv's `python`, with the venv's scripts on PATH as an activated
/// venv has them (maturin's PEP 517 backend runs `maturin` from PATH, the tests `tfcluster`).
pub(crate) fn command(python: &Path) -> Command {
    let mut command = Command::new(python);
    let bin = python.parent().unwrap_or(Path::new("."));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    if let Ok(joined) = std::env::join_paths(paths) {
        command.env("PATH", joined);
    }
    command
}

/// `python -m pip SUBCOMMAND --quiet --disable-pip-version-check` in the venv of `python`.
pub(crate) fn pip(python: &Path, subcommand: &str) -> Command {
    let mut pip = command(python);
    pip.args([
        "-m",
        "pip",
        subcommand,
        "--quiet",
        "--disable-pip-version-check",
    ]);
    pip
}
