//! The IMDSv2 stand-in against the Amazon EC2 User Guide: "Use IMDSv2", "Retrieve instance
//! metadata", "Spot Instance interruption notices", "EC2 instance rebalance recommendations"
//! and "Scheduled events for your instances".

use std::time::{Duration, Instant};

use http_standin::{Ec2Imds, Response};
use serde_json::{Value, json};

use super::raw::{self, Answer};

const TOKEN: &str = "/latest/api/token";
const TTL: &str = "X-aws-ec2-metadata-token-ttl-seconds";
const INSTANCE_ACTION: &str = "/latest/meta-data/spot/instance-action";
const REBALANCE: &str = "/latest/meta-data/events/recommendations/rebalance";
const SCHEDULED: &str = "/latest/meta-data/events/maintenance/scheduled";

/// The docs' example outputs, as printed.
const DOCS_TERMINATE: &str = r#"{"action": "terminate", "time": "2017-09-18T08:22:00Z"}"#;
const DOCS_STOP: &str = r#"{"action": "stop", "time": "2017-09-18T08:22:00Z"}"#;
const DOCS_REBALANCE: &str = r#"{"noticeTime": "2020-10-27T08:22:00Z"}"#;
const DOCS_SCHEDULED: &str = r#"[ 
  {
    "NotBefore" : "21 Jan 2019 09:00:43 GMT",
    "Code" : "system-reboot",
    "Description" : "scheduled reboot",
    "EventId" : "instance-event-0d59937288b749b32",
    "NotAfter" : "21 Jan 2019 09:17:23 GMT",
    "State" : "active"
  } 
]"#;

fn docs(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// `PUT /latest/api/token` with `headers`.
async fn put_token(imds: &Ec2Imds, headers: &[(&str, &str)]) -> Answer {
    raw::send(imds.endpoint(), "PUT", TOKEN, headers, "").await
}

/// A token for `ttl` seconds, as the docs' `curl -X PUT ... -H "X-aws-ec2-metadata-token-ttl-seconds: 21600"`.
async fn token(imds: &Ec2Imds, ttl: &str) -> String {
    let answer = put_token(imds, &[(TTL, ttl)]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.text().to_owned()
}

/// A `GET` with `token`, as the docs' `curl -H "X-aws-ec2-metadata-token: $TOKEN"`.
async fn get(imds: &Ec2Imds, token: &str, target: &str) -> Answer {
    raw::get(
        imds.endpoint(),
        target,
        &[("X-aws-ec2-metadata-token", token)],
    )
    .await
}

#[tokio::test]
async fn a_session_token_then_metadata_as_text() {
    let imds = Ec2Imds::start().await;
    assert!(
        imds.endpoint().starts_with("http://127.0.0.1:"),
        "{}",
        imds.endpoint()
    );
    let answer = put_token(&imds, &[(TTL, "21600")]).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/plain"));
    assert_eq!(
        answer.header("x-aws-ec2-metadata-token-ttl-seconds"),
        Some("21600")
    );
    let token = answer.text().to_owned();
    assert!(token.len() >= 40, "{token}");
    assert_eq!(imds.tokens_issued(), 1);

    let id = get(&imds, &token, "/latest/meta-data/instance-id").await;
    assert_eq!(id.status, 200);
    assert_eq!(id.header("content-type"), Some("text/plain"));
    assert_eq!(id.text(), "i-1234567890abcdef0");
    // The token is reused for further requests, as the docs' `ami-id` example does.
    let ami = get(&imds, &token, "/latest/meta-data/ami-id").await;
    assert_eq!(ami.text(), "ami-0abcdef1234567890");
    assert_eq!(
        get(&imds, &token, "/latest/meta-data/no-such-item")
            .await
            .status,
        404
    );
    // HEAD is allowed too.
    let head = raw::send(
        imds.endpoint(),
        "HEAD",
        "/latest/meta-data/instance-id",
        &[("X-aws-ec2-metadata-token", &token)],
        "",
    )
    .await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    imds.stop().await;
}

#[tokio::test]
async fn the_ttl_must_be_one_second_to_six_hours() {
    let imds = Ec2Imds::start().await;
    for ttl in ["0", "21601", "-1", "60s", ""] {
        let answer = put_token(&imds, &[(TTL, ttl)]).await;
        assert_eq!(answer.status, 400, "TTL {ttl:?}");
    }
    assert_eq!(put_token(&imds, &[]).await.status, 400, "no TTL header");
    assert_eq!(imds.tokens_issued(), 0);
    token(&imds, "1").await;
    token(&imds, "21600").await;
    assert_eq!(imds.tokens_issued(), 2);
    imds.stop().await;
}

#[tokio::test]
async fn puts_forwarded_or_to_a_versioned_path_are_forbidden() {
    let imds = Ec2Imds::start().await;
    let forwarded = put_token(&imds, &[(TTL, "60"), ("X-Forwarded-For", "203.0.113.7")]).await;
    assert_eq!(forwarded.status, 403);
    let versioned = raw::send(
        imds.endpoint(),
        "PUT",
        "/2021-03-23/api/token",
        &[(TTL, "60")],
        "",
    )
    .await;
    assert_eq!(versioned.status, 403);
    assert_eq!(imds.tokens_issued(), 0);
    imds.stop().await;
}

#[tokio::test]
async fn gets_without_a_valid_token_are_unauthorized() {
    let imds = Ec2Imds::start().await;
    let target = "/latest/meta-data/instance-id";
    assert_eq!(
        raw::get(imds.endpoint(), target, &[]).await.status,
        401,
        "IMDSv1"
    );
    assert_eq!(get(&imds, "AQAEAnot-a-token==", target).await.status, 401);
    // Even for items that do not exist: the token is checked first.
    assert_eq!(
        raw::get(imds.endpoint(), INSTANCE_ACTION, &[]).await.status,
        401
    );
    imds.stop().await;
}

#[tokio::test]
async fn a_token_expires_after_its_ttl() {
    let imds = Ec2Imds::start().await;
    let long = token(&imds, "21600").await;
    let issued = Instant::now();
    // Five seconds: two loopback requests take milliseconds, so it is fresh for the first
    // read however busy the machine.
    let short = token(&imds, "5").await;
    let target = "/latest/meta-data/instance-id";
    assert_eq!(get(&imds, &short, target).await.status, 200);
    // The one sleep of these tests: the TTL is wall-clock time.
    tokio::time::sleep_until((issued + Duration::from_millis(5_100)).into()).await;
    assert_eq!(get(&imds, &short, target).await.status, 401);
    assert_eq!(get(&imds, &long, target).await.status, 200);
    imds.stop().await;
}

#[tokio::test]
async fn expire_tokens_invalidates_every_token_issued_so_far() {
    let imds = Ec2Imds::start().await;
    let old = token(&imds, "21600").await;
    let target = "/latest/meta-data/instance-id";
    assert_eq!(get(&imds, &old, target).await.status, 200);
    imds.expire_tokens();
    assert_eq!(get(&imds, &old, target).await.status, 401);
    let new = token(&imds, "21600").await;
    assert_ne!(new, old);
    assert_eq!(get(&imds, &new, target).await.status, 200);
    assert_eq!(imds.tokens_issued(), 2);
    imds.stop().await;
}

#[tokio::test]
async fn spot_instance_action_is_absent_until_marked() {
    let imds = Ec2Imds::start().await;
    let token = token(&imds, "21600").await;
    assert_eq!(get(&imds, &token, INSTANCE_ACTION).await.status, 404);
    let termination_time = "/latest/meta-data/spot/termination-time";
    assert_eq!(get(&imds, &token, termination_time).await.status, 404);

    imds.set_spot_instance_action(Some(docs(DOCS_TERMINATE)));
    let action = get(&imds, &token, INSTANCE_ACTION).await;
    assert_eq!(action.status, 200);
    assert_eq!(action.json(), docs(DOCS_TERMINATE));
    assert_eq!(
        get(&imds, &token, termination_time).await.text(),
        "2017-09-18T08:22:00Z"
    );

    // A stop is no termination: termination-time is absent again.
    imds.set_spot_instance_action(Some(docs(DOCS_STOP)));
    assert_eq!(
        get(&imds, &token, INSTANCE_ACTION).await.json(),
        docs(DOCS_STOP)
    );
    assert_eq!(get(&imds, &token, termination_time).await.status, 404);

    imds.set_spot_instance_action(None);
    assert_eq!(get(&imds, &token, INSTANCE_ACTION).await.status, 404);
    imds.stop().await;
}

#[tokio::test]
async fn a_rebalance_recommendation_is_absent_until_emitted() {
    let imds = Ec2Imds::start().await;
    let token = token(&imds, "21600").await;
    assert_eq!(get(&imds, &token, REBALANCE).await.status, 404);
    imds.set_rebalance(Some(docs(DOCS_REBALANCE)));
    let rebalance = get(&imds, &token, REBALANCE).await;
    assert_eq!(rebalance.status, 200);
    assert_eq!(rebalance.json(), docs(DOCS_REBALANCE));
    imds.set_rebalance(None);
    assert_eq!(get(&imds, &token, REBALANCE).await.status, 404);
    imds.stop().await;
}

#[tokio::test]
async fn scheduled_maintenance_is_a_json_array_of_events() {
    let imds = Ec2Imds::start().await;
    let token = token(&imds, "21600").await;
    let none = get(&imds, &token, SCHEDULED).await;
    assert_eq!(none.status, 200);
    assert_eq!(none.json(), json!([]));
    imds.set_scheduled_maintenance(docs(DOCS_SCHEDULED));
    let scheduled = get(&imds, &token, SCHEDULED).await;
    assert_eq!(scheduled.json(), docs(DOCS_SCHEDULED));
    // Raw text is served byte for byte.
    imds.set("events/maintenance/scheduled", DOCS_SCHEDULED);
    assert_eq!(get(&imds, &token, SCHEDULED).await.text(), DOCS_SCHEDULED);
    imds.stop().await;
}

#[tokio::test]
async fn a_path_ending_in_a_slash_lists_what_is_under_it() {
    let imds = Ec2Imds::start().await;
    let token = token(&imds, "21600").await;
    let top = get(&imds, &token, "/latest/meta-data/").await;
    let items: Vec<&str> = top.text().split('\n').collect();
    assert!(items.contains(&"instance-id"), "{items:?}");
    assert!(items.contains(&"events/"), "{items:?}");
    assert!(!items.contains(&"spot/"), "{items:?}");
    imds.set_rebalance(Some(docs(DOCS_REBALANCE)));
    let events = get(&imds, &token, "/latest/meta-data/events/").await;
    assert_eq!(events.text(), "maintenance/\nrecommendations/");
    assert_eq!(
        get(&imds, &token, "/latest/meta-data/spot/").await.status,
        404
    );
    imds.stop().await;
}

#[tokio::test]
async fn overrides_misbehave_once() {
    let imds = Ec2Imds::start().await;
    imds.override_next(TOKEN, Response::text(500, "Internal Server Error"));
    assert_eq!(put_token(&imds, &[(TTL, "60")]).await.status, 500);
    let token = token(&imds, "60").await;
    imds.override_next(INSTANCE_ACTION, Response::text(200, "{\"action\": \"termi"));
    assert_eq!(
        get(&imds, &token, INSTANCE_ACTION).await.text(),
        "{\"action\": \"termi"
    );
    assert_eq!(get(&imds, &token, INSTANCE_ACTION).await.status, 404);
    assert_eq!(imds.requests().len(), 4);
    imds.stop().await;
}
