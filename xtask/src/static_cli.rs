//! The CLI with its default features, built statically for musl in the `dev` profile: the
//! container image's binary (the image suite), the test wheel's CLI (the python and Slurm
//! suites, through the package's build backend and `TFCLUSTER_CLI_TARGET`) and README's
//! `cargo run -p tfcluster` (the guide, through `CARGO_BUILD_TARGET`), all from one build in
//! [`Beside::Cli`]'s target directory. Built for the host as well, the same crates compiled
//! again would cost about 350 CPU-seconds of each test run. The released wheel's CLI is built
//! for glibc in manylinux's image (`.github/workflows/release.yml`); the workspace suite
//! tests a glibc build of the CLI with every feature.

use std::path::PathBuf;
use std::process::Command;

use crate::workspace::{self, Beside};

/// The musl target of this machine's architecture.
pub(crate) const TARGET: &str = "x86_64-unknown-linux-musl";

/// Installs musl's C compiler (ring's C parts need it) with apt when missing, and the Rust
/// standard library for [`TARGET`] with rustup. The test command does it with its other
/// installs, before anything runs beside the tests (apt runs one at a time).
pub(crate) fn install() -> Result<(), String> {
    let scratch = workspace::target_dir().join("static-cli-install");
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    crate::apt::ensure(&["musl-gcc"], &["musl-tools"], &scratch)?;
    workspace::run(Command::new("rustup").args(["target", "add", TARGET]))
}

/// Builds the CLI (or finds it built) and returns the binary.
pub(crate) fn build() -> Result<PathBuf, String> {
    workspace::run(cargo_builds_it(&mut Command::new("cargo")).args(["build", "-p", "tfcluster"]))?;
    Ok(Beside::Cli.dir().join(format!("{TARGET}/debug/tfcluster")))
}

/// Makes the cargo `command` starts build for [`TARGET`] in [`Beside::Cli`]'s directory:
/// [`build`], and README's `cargo run` run by the guide in the checkout.
pub(crate) fn cargo_builds_it(command: &mut Command) -> &mut Command {
    Beside::Cli
        .building_in(command)
        .env("CARGO_BUILD_TARGET", TARGET)
}

/// Makes the package's build backend, run by `command` (`pip wheel`), build the wheel's CLI
/// as [`build`] does; its module, built for the interpreter, shares the directory.
pub(crate) fn backend_builds_it(command: &mut Command) -> &mut Command {
    Beside::Cli
        .building_in(command)
        .env("TFCLUSTER_CLI_TARGET", TARGET)
}
