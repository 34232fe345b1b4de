//! `cargo xtask interop`: remote-connect against real TensorFlow 2.21 on loopback, both
//! directions (our client to `tf.distribute.Server`s, TensorFlow's client to our servers, and
//! the device-filter lists both clients send), from the TensorFlow venv.

use std::process::Command;

use crate::{tf_venv, workspace};

/// The test-name filter that selects the interop tests in remote-connect's test binary.
pub(crate) const FILTER: &str = "interop::";

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
    workspace::run(
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
    )
}
