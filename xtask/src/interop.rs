//! `cargo xtask interop`: remote-connect against real TensorFlow 2.21 on loopback, both
//! directions (our client to `tf.distribute.Server`s, TensorFlow's client to our servers, and
//! the device-filter lists both clients send), from the TensorFlow venv.

use std::process::Command;

use crate::{tf_venv, workspace};

/// The test-name filter that selects the interop tests in remote-connect's test binary.
pub(crate) const FILTER: &str = "interop::";

/// How many tests [`FILTER`] selects. `cargo test` succeeds when a filter matches nothing, so
/// a renamed module would drop the suite without a sound; fewer passing tests than this fail.
/// Raise it with each interop test added.
const TESTS: usize = 16;

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
    let stdout = workspace::run_echoed(
        Command::new("cargo")
            .args([
                "test",
                "-p",
                "remote-connect",
                "--test",
                "remote_connect",
                "--",
                FILTER,
            ])
            .env("TFCLUSTER_PYTHON", &python),
    )?;
    let passed = workspace::tests_passed(&stdout);
    if passed < TESTS {
        return Err(format!(
            "{passed} interop tests passed, {TESTS} expected: does {FILTER:?} still select them?"
        ));
    }
    Ok(())
}
