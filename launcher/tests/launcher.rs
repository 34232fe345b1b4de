//! Integration tests of `launcher`: the `Supervisor` of task processes — exits and stderr
//! tails as they happen, stops that leave nothing running however deaf the task. Every test
//! runs under a deadline ([`run`]).

use std::future::Future;
use std::time::Duration;

#[path = "launcher/supervise.rs"]
mod supervise;

/// A test's whole budget; none comes near it unless something hangs.
const TEST_DEADLINE: Duration = Duration::from_secs(60);

/// Runs `test` on a two-thread runtime and fails it if it takes longer than
/// [`TEST_DEADLINE`].
fn run<F: Future<Output = ()>>(test: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(TEST_DEADLINE, test)
                .await
                .unwrap_or_else(|_| panic!("the test hung: {TEST_DEADLINE:?}"));
        });
}
