//! The GCE metadata server stand-in against "View and query VM metadata", "Query the metadata
//! server for maintenance event notices" and "Create and use preemptible VMs".

use std::time::{Duration, Instant};

use http_standin::{GceMetadata, Response};

use super::raw::{self, Answer, BOUND};

const GOOGLE: (&str, &str) = ("Metadata-Flavor", "Google");
const PREEMPTED: &str = "/computeMetadata/v1/instance/preempted";
const MAINTENANCE: &str = "/computeMetadata/v1/instance/maintenance-event";

/// A `GET` as the docs' `curl ... -H "Metadata-Flavor: Google"`.
async fn get(metadata: &GceMetadata, target: &str) -> Answer {
    raw::get(metadata.host(), target, &[GOOGLE]).await
}

/// A value answer: `200`, as text, with the headers the server sends.
fn assert_value(answer: &Answer, value: &str) {
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.text(), value);
    assert_eq!(answer.header("content-type"), Some("application/text"));
    assert_eq!(answer.header("metadata-flavor"), Some("Google"));
    let etag = answer.header("etag").expect("an ETag");
    assert!(
        etag.len() == 16 && etag.bytes().all(|b| b.is_ascii_hexdigit()),
        "{etag}"
    );
}

#[tokio::test]
async fn defaults_as_a_running_vm_sees_them() {
    let metadata = GceMetadata::start().await;
    assert!(
        metadata.host().starts_with("127.0.0.1:"),
        "{}",
        metadata.host()
    );
    assert_value(&get(&metadata, PREEMPTED).await, "FALSE");
    assert_value(&get(&metadata, MAINTENANCE).await, "NONE");
    assert_value(
        &get(&metadata, "/computeMetadata/v1/instance/name").await,
        "tf-worker-0",
    );
    let id = get(&metadata, "/computeMetadata/v1/instance/id").await;
    assert!(id.text().bytes().all(|b| b.is_ascii_digit()), "{id:?}");
    let hostname = get(&metadata, "/computeMetadata/v1/instance/hostname").await;
    assert!(hostname.text().starts_with("tf-worker-0."), "{hostname:?}");
    // Every key has its own ETag.
    assert_ne!(
        metadata.etag("instance/preempted"),
        metadata.etag("instance/name")
    );
    metadata.stop().await;
}

#[tokio::test]
async fn refuses_requests_without_the_flavor_header_or_forwarded() {
    let metadata = GceMetadata::start().await;
    let missing = raw::get(metadata.host(), PREEMPTED, &[]).await;
    assert_eq!(missing.status, 403);
    assert_eq!(missing.text(), "Missing Metadata-Flavor:Google header.");
    let wrong = raw::get(metadata.host(), PREEMPTED, &[("Metadata-Flavor", "Amazon")]).await;
    assert_eq!(wrong.status, 403);
    let forwarded = raw::get(
        metadata.host(),
        PREEMPTED,
        &[GOOGLE, ("X-Forwarded-For", "203.0.113.7")],
    )
    .await;
    assert_eq!(forwarded.status, 403);
    assert!(forwarded.header("etag").is_none());
    // A refused request is still recorded, headers and all.
    let requests = metadata.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].header("x-forwarded-for"), Some("203.0.113.7"));
    metadata.stop().await;
}

#[tokio::test]
async fn unknown_keys_are_not_found() {
    let metadata = GceMetadata::start().await;
    for target in [
        "/computeMetadata/v1/instance/no-such-key",
        "/computeMetadata/v2/instance/preempted",
        "/latest/meta-data/instance-id",
    ] {
        assert_eq!(get(&metadata, target).await.status, 404, "{target}");
    }
    metadata.set("instance/attributes/role", "worker");
    let role = get(&metadata, "/computeMetadata/v1/instance/attributes/role").await;
    assert_value(&role, "worker");
    metadata.remove("instance/attributes/role");
    let gone = get(&metadata, "/computeMetadata/v1/instance/attributes/role").await;
    assert_eq!(gone.status, 404);
    metadata.stop().await;
}

#[tokio::test]
async fn a_changed_value_gets_a_new_etag_and_the_same_value_keeps_it() {
    let metadata = GceMetadata::start().await;
    let before = get(&metadata, PREEMPTED).await;
    metadata.set("instance/preempted", "FALSE");
    let same = get(&metadata, PREEMPTED).await;
    assert_eq!(before.header("etag"), same.header("etag"));
    metadata.set("instance/preempted", "TRUE");
    let after = get(&metadata, PREEMPTED).await;
    assert_value(&after, "TRUE");
    assert_ne!(before.header("etag"), after.header("etag"));
    assert_eq!(
        metadata.etag("instance/preempted").as_deref(),
        after.header("etag")
    );
    metadata.stop().await;
}

#[tokio::test]
async fn wait_for_change_hangs_until_the_value_changes() {
    let metadata = GceMetadata::start().await;
    let first = get(&metadata, PREEMPTED).await;
    let host = metadata.host().to_owned();
    let waiting = tokio::spawn(async move {
        raw::get(
            &host,
            &format!("{PREEMPTED}?wait_for_change=true"),
            &[GOOGLE],
        )
        .await
    });
    tokio::time::timeout(BOUND, metadata.wait_for_requests(2))
        .await
        .expect("hanging GET parked");
    assert!(!waiting.is_finished(), "answered before any change");
    metadata.set("instance/preempted", "TRUE");
    let changed = tokio::time::timeout(BOUND, waiting).await.unwrap().unwrap();
    assert_value(&changed, "TRUE");
    assert_ne!(changed.header("etag"), first.header("etag"));
    metadata.stop().await;
}

#[tokio::test]
async fn a_stale_last_etag_answers_at_once() {
    let metadata = GceMetadata::start().await;
    // The docs' sample starts from last_etag=0 and sends `wait_for_change=True`.
    let answer = get(
        &metadata,
        &format!("{MAINTENANCE}?wait_for_change=True&last_etag=0"),
    )
    .await;
    assert_value(&answer, "NONE");
    let etag = answer.header("etag").unwrap().to_owned();

    // Changed since that ETag: the next wait answers at once with the new value.
    metadata.set("instance/maintenance-event", "MIGRATE_ON_HOST_MAINTENANCE");
    let target = format!("{MAINTENANCE}?wait_for_change=true&last_etag={etag}");
    let changed = get(&metadata, &target).await;
    assert_value(&changed, "MIGRATE_ON_HOST_MAINTENANCE");
    metadata.stop().await;
}

#[tokio::test]
async fn the_current_etag_waits_for_the_next_change() {
    let metadata = GceMetadata::start().await;
    let etag = metadata.etag("instance/maintenance-event").unwrap();
    let host = metadata.host().to_owned();
    let target = format!("{MAINTENANCE}?wait_for_change=true&last_etag={etag}");
    let waiting = tokio::spawn(async move { raw::get(&host, &target, &[GOOGLE]).await });
    tokio::time::timeout(BOUND, metadata.wait_for_requests(1))
        .await
        .expect("hanging GET parked");
    // The same value again is no change.
    metadata.set("instance/maintenance-event", "NONE");
    metadata.set("instance/preempted", "TRUE");
    assert!(!waiting.is_finished(), "answered without a change");
    metadata.set(
        "instance/maintenance-event",
        "TERMINATE_ON_HOST_MAINTENANCE",
    );
    let changed = tokio::time::timeout(BOUND, waiting).await.unwrap().unwrap();
    assert_value(&changed, "TERMINATE_ON_HOST_MAINTENANCE");
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
    metadata.stop().await;
}

#[tokio::test]
async fn timeout_sec_answers_the_unchanged_value() {
    let metadata = GceMetadata::start().await;
    let etag = metadata.etag("instance/preempted").unwrap();
    let started = Instant::now();
    let target = format!("{PREEMPTED}?wait_for_change=true&last_etag={etag}&timeout_sec=1");
    let answer = get(&metadata, &target).await;
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_value(&answer, "FALSE");
    assert_eq!(answer.header("etag"), Some(etag.as_str()));

    let bad = get(
        &metadata,
        &format!("{PREEMPTED}?wait_for_change=true&timeout_sec=soon"),
    )
    .await;
    assert_eq!(bad.status, 400);
    metadata.stop().await;
}

#[tokio::test]
async fn a_key_removed_while_waited_on_is_not_found() {
    let metadata = GceMetadata::start().await;
    metadata.set("instance/attributes/drain", "no");
    let host = metadata.host().to_owned();
    let waiting = tokio::spawn(async move {
        let target = "/computeMetadata/v1/instance/attributes/drain?wait_for_change=true";
        raw::get(&host, target, &[GOOGLE]).await
    });
    tokio::time::timeout(BOUND, metadata.wait_for_requests(1))
        .await
        .expect("hanging GET parked");
    metadata.remove("instance/attributes/drain");
    let gone = tokio::time::timeout(BOUND, waiting).await.unwrap().unwrap();
    assert_eq!(gone.status, 404);
    metadata.stop().await;
}

#[tokio::test]
async fn overrides_misbehave_once_each_then_the_server_is_itself_again() {
    let metadata = GceMetadata::start().await;
    // "During maintenance the service can return a 503" (the docs' sample retries it).
    metadata.override_next(PREEMPTED, Response::text(503, "Service Unavailable"));
    metadata.override_next(PREEMPTED, Response::bytes(200, vec![0xc3, 0x28, 0x00]));
    metadata.override_next(PREEMPTED, Response::text(200, "x".repeat(8 << 20)));
    assert_eq!(get(&metadata, PREEMPTED).await.status, 503);
    assert_eq!(get(&metadata, PREEMPTED).await.body, [0xc3, 0x28, 0x00]);
    assert_eq!(get(&metadata, PREEMPTED).await.body.len(), 8 << 20);
    assert_value(&get(&metadata, PREEMPTED).await, "FALSE");
    // Other paths were never overridden.
    assert_value(&get(&metadata, MAINTENANCE).await, "NONE");

    // Garbage can be the value itself, with its ETag.
    metadata.set("instance/maintenance-event", vec![0xff, 0xfe]);
    let garbage = get(&metadata, MAINTENANCE).await;
    assert_eq!(garbage.body, [0xff, 0xfe]);
    assert!(garbage.header("etag").is_some());
    metadata.stop().await;
}
