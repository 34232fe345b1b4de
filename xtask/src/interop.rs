//! `cargo xtask interop`: remote-connect against real TensorFlow 2.21 on loopback, both
//! directions (our client to `tf.distribute.Server`s, TensorFlow's client to our servers, and
//! the device-filter lists both clients send), from the TensorFlow venv.

use crate::tally::{self, Suite};
use crate::{test_build, tf_venv};

/// The test-name filter that selects the interop tests in remote-connect's test binary.
pub(crate) const FILTER: &str = "interop::";

/// `cargo xtask interop`: the interop tests alone, counted.
pub(crate) fn run() -> Result<(), String> {
    tally::alone(suites())
}

/// The interop tests, run once from TensorFlow's venv. `cargo test` succeeds when a filter
/// matches nothing, so a renamed module would drop the suite without a sound: its floor (the
/// number of tests [`FILTER`] selects) is in the floors file.
pub(crate) fn suites() -> Vec<Suite> {
    let python = match tf_venv::ensure() {
        Ok(python) => python,
        Err(e) => return vec![tally::broken_suite("interop: venv", e)],
    };
    // The workspace's remote-connect binary, run as it is: a `cargo test -p` or `--test` of
    // its own would build it again with other features.
    let outcome =
        test_build::artifact("remote-connect", "test", "remote_connect").and_then(|binary| {
            test_build::run_test(&binary, "remote-connect", &python, &[FILTER.to_owned()])
        });
    match outcome {
        Ok((output, succeeded)) => {
            print!("{output}");
            tally::cargo_suites("interop", &output, succeeded)
        }
        Err(e) => vec![tally::broken_suite("interop: cargo", e)],
    }
}
