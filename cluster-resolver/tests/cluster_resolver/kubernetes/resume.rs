//! How the Kubernetes watch goes on when a watch ends: from the last bookmark's
//! resourceVersion when the server ends it (its `timeoutSeconds`), and from a new listing when
//! the server no longer has that version (`410 Expired`, as an `ERROR` event mid-watch, as
//! kube-apiserver's answer to a watch from too old a version, or as an HTTP 410), against the
//! stand-in of `api.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_resolver::WatchClusterResolver;
use cluster_resolver::kubernetes::KubernetesClusterResolver;
use cluster_resolver::watch::{ClusterStream, WatchOptions};
use cluster_spec::ClusterSpec;
use futures_util::StreamExt;
use serde_json::Value;

use super::api::{Api, Expiry, SELECTOR};
use super::client;
use http_standin::kubernetes::{self, bookmark, event, expired_event};

const PROMPT: Duration = Duration::from_secs(10);

/// A running pod of job `worker` with its pod IP.
fn pod(name: &str, ip: &str, version: u32) -> Value {
    kubernetes::pod(
        name,
        "training",
        &[("app", "w")],
        "Running",
        Some(ip),
        version,
    )
}

fn resolver(api: &Api) -> Arc<KubernetesClusterResolver> {
    Arc::new(
        KubernetesClusterResolver::new()
            .with_job("worker", [SELECTOR])
            .with_job("ps", ["app=ps"])
            .with_port(2222)
            .with_client(client(&api.server, "training")),
    )
}

pub(super) fn options() -> WatchOptions {
    WatchOptions::default()
        .with_coalesce(Duration::from_millis(100))
        .with_backoff(Duration::from_millis(10), Duration::from_millis(50))
}

/// The stream's next item, within [`PROMPT`].
pub(super) async fn next(
    changes: &mut ClusterStream,
) -> Result<ClusterSpec, cluster_resolver::Error> {
    tokio::time::timeout(PROMPT, changes.next())
        .await
        .expect("an item within the deadline")
        .expect("watch streams never end")
}

/// Polls the stream, which must say nothing meanwhile (the watcher only asks when polled),
/// until the `n`th `app=w` watch has been asked for.
pub(super) async fn quiet_until_watching(api: &Api, changes: &mut ClusterStream, n: usize) {
    tokio::select! {
        item = changes.next() => panic!("nothing was to change: {item:?}"),
        () = api.watching(n) => {}
    }
}

/// Nothing comes within 400 ms.
async fn quiet(changes: &mut ClusterStream) {
    let item = tokio::time::timeout(Duration::from_millis(400), changes.next()).await;
    assert!(item.is_err(), "{item:?}");
}

fn spec(workers: &[&str]) -> ClusterSpec {
    ClusterSpec::builder()
        .job("worker", workers.iter().copied())
        .job("ps", [] as [&str; 0])
        .build()
        .expect("valid spec")
}

/// Waits until `n` `app=w` listings have been asked for.
async fn listed(api: &Api, n: usize) {
    let deadline = Instant::now() + PROMPT;
    while api.requests(false).len() < n {
        assert!(Instant::now() < deadline, "listing {n} was not asked for");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The resourceVersion each `app=w` watch asked for, in order.
fn versions(api: &Api) -> Vec<String> {
    api.requests(true)
        .iter()
        .map(|r| r.query("resourceVersion").unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn a_watch_ended_by_the_server_resumes_from_the_last_bookmark() {
    let api = Api::start(vec![pod("w-0", "10.0.0.1", 90)], 100, Expiry::ErrorEvent).await;
    let mut changes = resolver(&api).watch(options());
    assert_eq!(next(&mut changes).await.unwrap(), spec(&["10.0.0.1:2222"]));
    quiet_until_watching(&api, &mut changes, 1).await;

    // Nothing selected changed up to 150: a bookmark says so, and changes no spec.
    api.send(bookmark(150, false));
    quiet(&mut changes).await;
    // The server ends the watch (its timeoutSeconds): the next starts at the bookmark, with
    // no listing in between.
    api.end_watch();
    quiet_until_watching(&api, &mut changes, 2).await;
    assert_eq!(versions(&api), ["100", "150"]);
    assert_eq!(api.requests(false).len(), 1);

    // The resumed watch carries the changes.
    api.send(event("ADDED", pod("w-1", "10.0.0.2", 151)));
    assert_eq!(
        next(&mut changes).await.unwrap(),
        spec(&["10.0.0.1:2222", "10.0.0.2:2222"])
    );
    drop(changes);
    api.stop().await;
}

/// While the watch was gone, `w-0` was deleted and `w-2` created, and the history before 250
/// compacted: the new listing (at 300) is all that tells.
fn meanwhile(api: &Api) {
    let mut state = api.state();
    state.pods = vec![pod("w-1", "10.0.0.2", 91), pod("w-2", "10.0.0.3", 280)];
    state.version = 300;
    state.oldest = 250;
}

/// Starts a watch on `w-0` and `w-1` listed at 100, and returns it once it watches.
async fn watching_two(api: &Api) -> ClusterStream {
    let mut changes = resolver(api).watch(options());
    assert_eq!(
        next(&mut changes).await.unwrap(),
        spec(&["10.0.0.1:2222", "10.0.0.2:2222"])
    );
    quiet_until_watching(api, &mut changes, 1).await;
    changes
}

fn two_pods() -> Vec<Value> {
    vec![pod("w-0", "10.0.0.1", 90), pod("w-1", "10.0.0.2", 91)]
}

/// After an expired watch: the next item is the new listing's spec, no error; the listing
/// asked again is the first one's request; the watch goes on from the new listing's version.
async fn relisted(api: &Api, changes: &mut ClusterStream, versions_asked: &[&str]) {
    assert_eq!(
        next(changes).await.unwrap(),
        spec(&["10.0.0.2:2222", "10.0.0.3:2222"])
    );
    listed(api, 2).await;
    let lists = api.requests(false);
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[1].path, lists[0].path);
    assert_eq!(lists[1].query, lists[0].query);
    quiet_until_watching(api, changes, versions_asked.len()).await;
    assert_eq!(versions(api), versions_asked);
    quiet(changes).await;
}

#[tokio::test]
async fn an_expired_error_event_mid_watch_lists_again() {
    let api = Api::start(two_pods(), 100, Expiry::ErrorEvent).await;
    let mut changes = watching_two(&api).await;
    meanwhile(&api);
    // etcd compacted past the watch: the server says so on the stream, and ends it.
    api.send(expired_event(100, 250));
    api.end_watch();
    relisted(&api, &mut changes, &["100", "300"]).await;
    drop(changes);
    api.stop().await;
}

#[tokio::test]
async fn a_watch_from_an_expired_version_lists_again() {
    let api = Api::start(two_pods(), 100, Expiry::ErrorEvent).await;
    let mut changes = watching_two(&api).await;
    meanwhile(&api);
    // The server ends the watch; the next, from 100, is answered with the ERROR event.
    api.end_watch();
    relisted(&api, &mut changes, &["100", "100", "300"]).await;
    drop(changes);
    api.stop().await;
}

#[tokio::test]
async fn a_watch_answered_http_410_lists_again() {
    let api = Api::start(two_pods(), 100, Expiry::HttpGone).await;
    let mut changes = watching_two(&api).await;
    meanwhile(&api);
    // The next watch, from 100, is answered 410 Gone: kube-runtime alone would ask again from
    // 100 forever; the resolver lists again.
    api.end_watch();
    relisted(&api, &mut changes, &["100", "100", "300"]).await;
    drop(changes);
    api.stop().await;
}
