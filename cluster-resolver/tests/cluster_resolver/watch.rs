//! Watches: a polled resolver and a cluster file followed as they change (feature `watch`).

mod file;
mod poll;

use std::time::Duration;

use cluster_resolver::Error;
use cluster_resolver::watch::ClusterStream;
use cluster_spec::ClusterSpec;
use futures_util::StreamExt;

/// A deadline for what should come promptly: file events, a short poll interval.
const PROMPT: Duration = Duration::from_secs(10);

/// The next item of `stream`, failing the test when none comes within [`PROMPT`].
async fn next(stream: &mut ClusterStream) -> Result<ClusterSpec, Error> {
    tokio::time::timeout(PROMPT, stream.next())
        .await
        .expect("an item within the deadline")
        .expect("watch streams never end")
}

/// Whether `stream` stays quiet for `quiet`.
async fn stays_quiet(stream: &mut ClusterStream, quiet: Duration) -> bool {
    tokio::time::timeout(quiet, stream.next()).await.is_err()
}

/// A one-job spec with `n` tasks `w0:1`, `w1:1`, ...
fn workers(n: usize) -> ClusterSpec {
    let addresses: Vec<String> = (0..n).map(|i| format!("w{i}:1")).collect();
    ClusterSpec::builder()
        .job("worker", addresses)
        .build()
        .expect("valid spec")
}
