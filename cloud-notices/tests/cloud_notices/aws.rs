//! EC2: IMDSv2's session tokens, then the spot action, the rebalance recommendation and the
//! scheduled events.

use std::time::Duration;

use cloud_notices::{Cloud, NoticeKind, NoticeSource, NoticeWatcher, WatchOptions};
use http_standin::Ec2Imds;
use serde_json::json;

use crate::until;

fn watch(imds: &Ec2Imds, token_ttl: Duration) -> NoticeWatcher {
    let options = WatchOptions::default()
        .with_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint())
        .with_poll(Duration::from_millis(100))
        .with_aws_token_ttl(token_ttl);
    NoticeWatcher::start(NoticeSource::Cloud(Cloud::Aws), &options)
        .expect("a good endpoint")
        .expect("aws is watched")
}

#[tokio::test]
async fn a_spot_interruption_is_a_notice_with_its_time_as_the_deadline() {
    let imds = Ec2Imds::start().await;
    let watcher = watch(&imds, Duration::from_secs(21_600));
    let mut notices = watcher.notices();
    imds.wait_for_requests(4).await;
    assert_eq!(*notices.borrow(), None, "404: no interruption");
    let time = "2037-09-18T08:22:00Z";
    imds.set_spot_instance_action(Some(json!({"action": "terminate", "time": time})));
    let notice = until(&mut notices, "spot notice", Option::is_some)
        .await
        .unwrap();
    assert_eq!(
        (notice.cloud, notice.kind),
        (Cloud::Aws, NoticeKind::Preemption)
    );
    assert_eq!(notice.detail, "terminate");
    assert_eq!(notice.deadline, humantime::parse_rfc3339(time).ok());
    imds.set_spot_instance_action(None);
    until(&mut notices, "withdrawal", Option::is_none).await;

    let requests = imds.requests();
    let puts: Vec<_> = requests.iter().filter(|r| r.method == "PUT").collect();
    assert_eq!(puts.len(), 1, "one token serves the session: {requests:?}");
    assert_eq!(puts[0].path, "/latest/api/token");
    assert_eq!(
        puts[0].header("x-aws-ec2-metadata-token-ttl-seconds"),
        Some("21600")
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.method == "GET")
            .all(|r| r.header("x-aws-ec2-metadata-token").is_some()),
        "every read carries the token"
    );
    drop(watcher);
    imds.stop().await;
}

#[tokio::test]
async fn tokens_that_expire_or_are_refused_are_replaced_and_reading_goes_on() {
    let imds = Ec2Imds::start().await;
    // One-second tokens: renewed before they expire, many times in the test.
    let watcher = watch(&imds, Duration::from_secs(1));
    let mut notices = watcher.notices();
    tokio::time::timeout(crate::WAIT, async {
        while imds.tokens_issued() < 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("tokens renewed as they expire");
    // Every token so far refused: the next read gets 401, and a new token is fetched.
    let before = imds.tokens_issued();
    imds.expire_tokens();
    imds.set_spot_instance_action(Some(
        json!({"action": "stop", "time": "2037-01-01T00:00:00Z"}),
    ));
    let notice = until(&mut notices, "spot notice", Option::is_some)
        .await
        .unwrap();
    assert_eq!(notice.detail, "stop");
    assert!(imds.tokens_issued() > before);
    drop(watcher);
    imds.stop().await;
}

#[tokio::test]
async fn a_rebalance_recommendation_is_no_departure_and_scheduled_maintenance_is() {
    let imds = Ec2Imds::start().await;
    let watcher = watch(&imds, Duration::from_secs(21_600));
    let mut notices = watcher.notices();
    imds.set_rebalance(Some(json!({"noticeTime": "2020-10-27T08:22:00Z"})));
    let notice = until(&mut notices, "rebalance", Option::is_some)
        .await
        .unwrap();
    assert_eq!(
        (notice.kind, notice.deadline),
        (NoticeKind::Rebalance, None)
    );
    assert!(!notice.is_departure());
    imds.set_scheduled_maintenance(json!([{
        "NotBefore": "21 Jan 2037 09:00:43 GMT",
        "Code": "system-reboot",
        "Description": "scheduled reboot",
        "EventId": "instance-event-0d59937288b749b32",
        "NotAfter": "21 Jan 2037 09:17:23 GMT",
        "State": "active"
    }]));
    let notice = until(&mut notices, "maintenance", |n| {
        n.as_ref()
            .is_some_and(|n| n.kind == NoticeKind::Maintenance)
    })
    .await
    .unwrap();
    assert_eq!(notice.detail, "system-reboot");
    assert_eq!(
        notice.event_id.as_deref(),
        Some("instance-event-0d59937288b749b32")
    );
    assert_eq!(
        notice.deadline,
        humantime::parse_rfc3339("2037-01-21T09:00:43Z").ok()
    );
    drop(watcher);
    imds.stop().await;
}
