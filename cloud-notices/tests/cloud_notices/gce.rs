//! GCE: `instance/preempted` and `instance/maintenance-event`, long-polled.

use std::time::{Duration, Instant, SystemTime};

use cloud_notices::{Cloud, NoticeKind, NoticeSource, NoticeWatcher, WatchOptions};
use http_standin::{GceMetadata, Response};

use crate::until;

const PREEMPTED: &str = "instance/preempted";
const MAINTENANCE: &str = "instance/maintenance-event";

fn watch(metadata: &GceMetadata) -> NoticeWatcher {
    let options = WatchOptions::default()
        .with_var("GCE_METADATA_HOST", metadata.host())
        .with_poll(Duration::from_millis(100))
        .with_long_poll(Duration::from_secs(30));
    NoticeWatcher::start(NoticeSource::Cloud(Cloud::Gce), &options)
        .expect("a good endpoint")
        .expect("gce is watched")
}

#[tokio::test]
async fn a_spot_preemption_is_seen_as_it_is_set_and_withdrawn_as_it_clears() {
    let metadata = GceMetadata::start().await;
    let watcher = watch(&metadata);
    let mut notices = watcher.notices();
    // Both keys read, then both long polls parked.
    metadata.wait_for_requests(4).await;
    let set = Instant::now();
    metadata.set(PREEMPTED, "TRUE");
    let notice = until(&mut notices, "preemption", Option::is_some)
        .await
        .unwrap();
    let seen_after = set.elapsed();
    assert_eq!(
        (notice.cloud, notice.kind),
        (Cloud::Gce, NoticeKind::Preemption)
    );
    assert_eq!((notice.source, notice.detail.as_str()), (PREEMPTED, "TRUE"));
    let left = notice.remaining(SystemTime::now()).expect("a deadline");
    assert!(
        left <= Duration::from_secs(30) && left > Duration::from_secs(20),
        "{left:?}"
    );
    // A long poll answers the change itself: far sooner than the poll interval would.
    assert!(seen_after < Duration::from_secs(5), "{seen_after:?}");
    metadata.set(PREEMPTED, "FALSE");
    until(&mut notices, "withdrawal", Option::is_none).await;

    let requests = metadata.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.header("metadata-flavor") == Some("Google")),
        "every request carries Metadata-Flavor: Google"
    );
    let long_polls: Vec<_> = requests
        .iter()
        .filter(|r| r.query("wait_for_change") == Some("true"))
        .collect();
    assert!(long_polls.len() >= 3, "{requests:?}");
    assert!(long_polls.iter().all(|r| r.query("last_etag").is_some()));
    drop(watcher);
    metadata.stop().await;
}

#[tokio::test]
async fn a_terminating_maintenance_is_a_notice_and_a_migration_is_not() {
    let metadata = GceMetadata::start().await;
    let watcher = watch(&metadata);
    let mut notices = watcher.notices();
    metadata.wait_for_requests(4).await;
    metadata.set(MAINTENANCE, "MIGRATE_ON_HOST_MAINTENANCE");
    // The long poll answered with the migration, and the next one parked.
    metadata.wait_for_requests(5).await;
    assert_eq!(*notices.borrow(), None, "a live migration keeps the VM");
    metadata.set(MAINTENANCE, "TERMINATE_ON_HOST_MAINTENANCE");
    let notice = until(&mut notices, "maintenance", Option::is_some)
        .await
        .unwrap();
    assert_eq!(notice.kind, NoticeKind::Maintenance);
    let left = notice.remaining(SystemTime::now()).expect("a deadline");
    assert!(
        left <= Duration::from_secs(60) && left > Duration::from_secs(50),
        "{left:?}"
    );
    metadata.set(MAINTENANCE, "NONE");
    until(&mut notices, "withdrawal", Option::is_none).await;
    drop(watcher);
    metadata.stop().await;
}

#[tokio::test]
async fn a_flapping_notice_is_followed_each_way() {
    let metadata = GceMetadata::start().await;
    let watcher = watch(&metadata);
    let mut notices = watcher.notices();
    metadata.wait_for_requests(4).await;
    for _ in 0..3 {
        metadata.set(PREEMPTED, "TRUE");
        until(&mut notices, "preemption", Option::is_some).await;
        metadata.set(PREEMPTED, "FALSE");
        until(&mut notices, "withdrawal", Option::is_none).await;
    }
    drop(watcher);
    metadata.stop().await;
}

#[tokio::test]
async fn garbage_and_a_huge_body_are_survived_and_the_next_notice_still_seen() {
    let metadata = GceMetadata::start().await;
    let path = format!("/computeMetadata/v1/{PREEMPTED}");
    // The first reads: a 2 MiB answer, then a 500, then a value no GCE sends.
    metadata.override_next(&path, Response::status(200, "x".repeat(2 << 20)));
    metadata.override_next(&path, Response::status(500, "internal error"));
    let watcher = watch(&metadata);
    let mut notices = watcher.notices();
    metadata.set(PREEMPTED, "MAYBE");
    metadata.wait_for_requests(5).await;
    assert_eq!(*notices.borrow(), None, "garbage is no notice");
    metadata.set(PREEMPTED, "TRUE");
    let notice = until(&mut notices, "preemption", Option::is_some)
        .await
        .unwrap();
    assert_eq!(notice.kind, NoticeKind::Preemption);
    drop(watcher);
    metadata.stop().await;
}

#[tokio::test]
async fn a_service_that_is_down_leaves_no_notice_and_no_end() {
    // A port nothing listens on: every read is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = closed.local_addr().unwrap().to_string();
    drop(closed);
    let options = WatchOptions::default()
        .with_var("GCE_METADATA_HOST", &host)
        .with_poll(Duration::from_millis(50));
    let watcher = NoticeWatcher::start(NoticeSource::Cloud(Cloud::Gce), &options)
        .unwrap()
        .unwrap();
    let mut notices = watcher.notices();
    let changed = tokio::time::timeout(Duration::from_millis(500), notices.changed()).await;
    assert!(changed.is_err(), "no notice, and the watcher still runs");
}
