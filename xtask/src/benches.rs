//! The criterion benches, each benchmark run once as a test (`cargo test --bench '*'`:
//! criterion's test mode, one iteration and no measurement), so a bench that panics, or no
//! longer measures what it says, fails the test command instead of waiting for someone's
//! `cargo bench`. Each benchmark counts one test; their figures come from `cargo bench`
//! (docs/benchmarks.md). The tests' linted build already holds the benches (`--benches`), so
//! nothing is compiled again.

use std::process::Command;

use crate::tally::{self, Suite};
use crate::test_build;

/// The suites' label in the tally and the floors file.
const LABEL: &str = "benches";

/// One suite per bench file: its benchmarks, each run once.
pub(crate) fn suites() -> Vec<Suite> {
    let mut cargo = Command::new("cargo");
    if let Err(e) = test_build::as_built(&mut cargo) {
        return vec![tally::broken_suite(&format!("{LABEL}: cargo"), e)];
    }
    cargo.args([
        "test",
        "--workspace",
        "--all-features",
        "--no-fail-fast",
        "--bench",
        "*",
    ]);
    tally::cargo_test(LABEL, &mut cargo)
}
