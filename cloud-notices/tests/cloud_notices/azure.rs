//! Azure: Scheduled Events for this VM, and their approval.

use std::time::Duration;

use cloud_notices::{Cloud, NoticeKind, NoticeSource, NoticeWatcher, WatchOptions};
use http_standin::AzureScheduledEvents;
use http_standin::azure_events::event;

use crate::until;

fn watch(events: &AzureScheduledEvents) -> NoticeWatcher {
    let options = WatchOptions::default()
        .with_var("TFCLUSTER_AZURE_METADATA_ENDPOINT", events.endpoint())
        .with_poll(Duration::from_millis(100));
    NoticeWatcher::start(NoticeSource::Cloud(Cloud::Azure), &options)
        .expect("a good endpoint")
        .expect("azure is watched")
}

#[tokio::test]
async fn this_vms_preemption_is_a_notice_and_is_approved_on_request() {
    let events = AzureScheduledEvents::start().await;
    events.set_vm_name("vm-7");
    let watcher = watch(&events);
    let mut notices = watcher.notices();
    events.schedule(event("E-other", "Preempt", &["vm-8"]));
    events.schedule(event("E-freeze", "Freeze", &["vm-7"]));
    events.wait_for_requests(4).await;
    assert_eq!(
        *notices.borrow(),
        None,
        "another VM's event, and a freeze, are not ours"
    );
    events.schedule(event("E-ours", "Preempt", &["vm-7", "vm-8"]));
    let notice = until(&mut notices, "preemption", Option::is_some)
        .await
        .unwrap();
    assert_eq!(
        (notice.cloud, notice.kind),
        (Cloud::Azure, NoticeKind::Preemption)
    );
    assert_eq!(notice.event_id.as_deref(), Some("E-ours"));
    assert!(events.acknowledged().is_empty(), "approved only when asked");
    assert!(watcher.acknowledge(&notice).await.expect("approved"));
    assert_eq!(events.acknowledged(), ["E-ours"]);
    let requests = events.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.header("metadata") == Some("true"))
    );
    assert!(requests.iter().all(|r| r.query("api-version").is_some()));
    drop(watcher);
    events.stop().await;
}

#[tokio::test]
async fn a_termination_and_a_reboot_are_notices_and_a_cleared_event_withdraws() {
    let events = AzureScheduledEvents::start().await;
    let watcher = watch(&events);
    let mut notices = watcher.notices();
    let name = "vm-0";
    events.set_vm_name(name);
    events.schedule(event("E-term", "Terminate", &[name]));
    let notice = until(&mut notices, "termination", Option::is_some)
        .await
        .unwrap();
    assert_eq!(notice.kind, NoticeKind::Termination);
    events.clear();
    until(&mut notices, "withdrawal", Option::is_none).await;
    events.schedule(event("E-boot", "Reboot", &[name]));
    let notice = until(&mut notices, "reboot", Option::is_some)
        .await
        .unwrap();
    assert_eq!(notice.kind, NoticeKind::Maintenance);
    drop(watcher);
    events.stop().await;
}
