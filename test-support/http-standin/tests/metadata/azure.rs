//! The Scheduled Events stand-in against "Azure Metadata Service: Scheduled Events for Linux
//! VMs" and "Azure Instance Metadata Service".

use http_standin::Response;
use http_standin::azure_events::{self, AzureScheduledEvents};
use serde_json::{Value, json};

use super::raw::{self, Answer};

const EVENTS: &str = "/metadata/scheduledevents?api-version=2020-07-01";
const METADATA: (&str, &str) = ("Metadata", "true");

/// The docs' "Example responses": two VMs live migrated, incarnations 1 to 4.
const DOCS_INCARNATION_1: &str = r#"{
    "DocumentIncarnation":  1,
    "Events":  [
               ]
}"#;
const DOCS_INCARNATION_2: &str = r#"{
    "DocumentIncarnation":  2,
    "Events":  [
                   {
                       "EventId":  "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
                       "EventStatus":  "Scheduled",
                       "EventType":  "Freeze",
                       "ResourceType":  "VirtualMachine",
                       "Resources":  [
                                         "WestNO_0",
                                         "WestNO_1"
                                     ],
                       "NotBefore":  "Mon, 11 Apr 2026 22:26:58 GMT",
                       "Description":  "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
                       "EventSource":  "Platform",
                       "DurationInSeconds":  5
                   }
               ]
}"#;
const DOCS_INCARNATION_3: &str = r#"{
    "DocumentIncarnation":  3,
    "Events":  [
                   {
                       "EventId":  "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
                       "EventStatus":  "Started",
                       "EventType":  "Freeze",
                       "ResourceType":  "VirtualMachine",
                       "Resources":  [
                                         "WestNO_0",
                                         "WestNO_1"
                                     ],
                       "NotBefore":  "",
                       "Description":  "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
                       "EventSource":  "Platform",
                       "DurationInSeconds":  5
                   }
               ]
}"#;
const DOCS_INCARNATION_4: &str = r#"{
    "DocumentIncarnation":  4,
    "Events":  [
               ]
}"#;
const DOCS_EVENT_ID: &str = "C7061BAC-AFDC-4513-B24B-AA5F13A16123";

/// The error the docs show for a request without `api-version`.
const DOCS_NO_VERSION: &str = r#"{
    "error": "Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds",
    "newest-versions": [
        "2025-04-07",
        "2024-07-17",
        "2024-03-15"
    ]
}"#;

fn docs(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The docs' `curl -H Metadata:true http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01`.
async fn events(azure: &AzureScheduledEvents) -> Answer {
    raw::get(azure.endpoint(), EVENTS, &[METADATA]).await
}

/// The docs' `curl -H Metadata:true -X POST -d '{"StartRequests": [...]}' ...`.
async fn start(azure: &AzureScheduledEvents, body: &str) -> Answer {
    raw::send(azure.endpoint(), "POST", EVENTS, &[METADATA], body).await
}

/// The docs' incarnation 2 event, without its incarnation.
fn docs_event() -> Value {
    docs(DOCS_INCARNATION_2)["Events"][0].clone()
}

#[tokio::test]
async fn no_events_at_first() {
    let azure = AzureScheduledEvents::start().await;
    assert!(
        azure.endpoint().starts_with("http://127.0.0.1:"),
        "{}",
        azure.endpoint()
    );
    let answer = events(&azure).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(answer.json(), docs(DOCS_INCARNATION_1));
    azure.stop().await;
}

#[tokio::test]
async fn the_docs_example_sequence_schedule_approve_complete() {
    let azure = AzureScheduledEvents::start().await;
    azure.schedule(docs_event());
    assert_eq!(events(&azure).await.json(), docs(DOCS_INCARNATION_2));

    let approved = start(
        &azure,
        &format!(r#"{{"StartRequests": [{{"EventId": "{DOCS_EVENT_ID}"}}]}}"#),
    )
    .await;
    assert_eq!(approved.status, 200);
    assert_eq!(azure.acknowledged(), [DOCS_EVENT_ID]);
    assert_eq!(events(&azure).await.json(), docs(DOCS_INCARNATION_3));

    // Approving a started event again is still 200 and changes nothing.
    let again = start(
        &azure,
        &format!(r#"{{"StartRequests": [{{"EventId": "{DOCS_EVENT_ID}"}}]}}"#),
    )
    .await;
    assert_eq!(again.status, 200);
    assert_eq!(azure.incarnation(), 3);

    azure.complete(DOCS_EVENT_ID);
    assert_eq!(events(&azure).await.json(), docs(DOCS_INCARNATION_4));
    azure.stop().await;
}

#[tokio::test]
async fn every_change_is_a_new_incarnation() {
    let azure = AzureScheduledEvents::start().await;
    assert_eq!(azure.incarnation(), 1);
    azure.clear();
    assert_eq!(azure.incarnation(), 1, "clearing nothing is no change");
    let preempt = azure_events::event("5DD55B64-45AD-49D3-BBC9-F57D4EA97BD7", "Preempt", &["vm-0"]);
    azure.schedule(preempt.clone());
    azure.schedule(azure_events::event(
        "f020ba2e-3bc0-4c40-a10b-86575a9eabd5",
        "Reboot",
        &["vm-0"],
    ));
    let answer = events(&azure).await.json();
    assert_eq!(answer["DocumentIncarnation"], 3);
    assert_eq!(answer["Events"][0], preempt);
    assert_eq!(
        answer["Events"][0]["NotBefore"],
        "Mon, 19 Sep 2016 18:29:47 GMT"
    );
    assert_eq!(azure.events().len(), 2);
    azure.complete("no-such-event");
    assert_eq!(azure.incarnation(), 3);
    azure.clear();
    let answer = events(&azure).await.json();
    assert_eq!(answer, json!({"DocumentIncarnation": 4, "Events": []}));
    azure.stop().await;
}

#[tokio::test]
async fn requests_need_the_metadata_header() {
    let azure = AzureScheduledEvents::start().await;
    for headers in [&[][..], &[("Metadata", "false")][..]] {
        let answer = raw::get(azure.endpoint(), EVENTS, headers).await;
        assert_eq!(answer.status, 400, "{headers:?}");
        assert_eq!(
            answer.json()["error"],
            "Bad request. Required metadata header not specified"
        );
    }
    // `Invoke-RestMethod -Headers @{"Metadata"="true"}` and curl's `Metadata:true` alike.
    let spelled = raw::get(azure.endpoint(), EVENTS, &[("metadata", "True")]).await;
    assert_eq!(spelled.status, 200);
    let forwarded = raw::get(
        azure.endpoint(),
        EVENTS,
        &[METADATA, ("X-Forwarded-For", "203.0.113.7")],
    )
    .await;
    assert_eq!(forwarded.status, 400);
    azure.stop().await;
}

#[tokio::test]
async fn requests_need_a_supported_api_version_once() {
    let azure = AzureScheduledEvents::start().await;
    for target in [
        "/metadata/scheduledevents",
        "/metadata/scheduledevents?api-version=",
        "/metadata/scheduledevents?api-version=latest",
        "/metadata/scheduledevents?api-version=2099-01-01",
    ] {
        let answer = raw::get(azure.endpoint(), target, &[METADATA]).await;
        assert_eq!(answer.status, 400, "{target}");
        assert_eq!(answer.json(), docs(DOCS_NO_VERSION), "{target}");
    }
    let duplicate = "/metadata/scheduledevents?api-version=2020-07-01&api-version=2019-08-01";
    assert_eq!(
        raw::get(azure.endpoint(), duplicate, &[METADATA])
            .await
            .status,
        400
    );
    for version in ["2019-08-01", "2017-11-01", "2021-02-01"] {
        let target = format!("/metadata/scheduledevents?api-version={version}");
        assert_eq!(
            raw::get(azure.endpoint(), &target, &[METADATA])
                .await
                .status,
            200
        );
    }
    azure.stop().await;
}

#[tokio::test]
async fn malformed_or_unknown_start_requests_are_bad_requests() {
    let azure = AzureScheduledEvents::start().await;
    azure.schedule(azure_events::event("a", "Reboot", &["vm-0"]));
    for body in [
        "",
        "StartRequests",
        r#"{"StartRequests": {"EventId": "a"}}"#,
        r#"{"StartRequests": [{"EventID": "a"}]}"#,
        r#"{"StartRequests": [{"EventId": 7}]}"#,
    ] {
        assert_eq!(start(&azure, body).await.status, 400, "{body:?}");
    }
    assert!(azure.acknowledged().is_empty());
    assert_eq!(azure.events()[0]["EventStatus"], "Scheduled");

    let unknown = start(&azure, r#"{"StartRequests": [{"EventId": "b"}]}"#).await;
    assert_eq!(unknown.status, 400);
    assert_eq!(azure.acknowledged(), ["b"]);
    assert_eq!(azure.incarnation(), 2);

    // Several at once, the docs' "You can confirm multiple events in a single request".
    azure.schedule(azure_events::event("c", "Redeploy", &["vm-0"]));
    let both = start(
        &azure,
        r#"{"StartRequests": [{"EventId": "a"}, {"EventId": "c"}]}"#,
    )
    .await;
    assert_eq!(both.status, 200);
    assert_eq!(azure.acknowledged(), ["b", "a", "c"]);
    assert!(azure.events().iter().all(|e| e["EventStatus"] == "Started"));
    assert_eq!(azure.incarnation(), 4, "one new document for both");
    azure.stop().await;
}

#[tokio::test]
async fn the_vm_name_as_text() {
    let azure = AzureScheduledEvents::start().await;
    let target = "/metadata/instance/compute/name?api-version=2021-02-01&format=text";
    let name = raw::get(azure.endpoint(), target, &[METADATA]).await;
    assert_eq!(name.status, 200);
    assert_eq!(
        name.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(name.text(), "vm-0");
    azure.set_vm_name("WestNO_0");
    assert_eq!(
        raw::get(azure.endpoint(), target, &[METADATA]).await.text(),
        "WestNO_0"
    );
    // A leaf needs format=text.
    for target in [
        "/metadata/instance/compute/name?api-version=2021-02-01",
        "/metadata/instance/compute/name?api-version=2021-02-01&format=json",
    ] {
        assert_eq!(
            raw::get(azure.endpoint(), target, &[METADATA]).await.status,
            400
        );
    }
    azure.stop().await;
}

#[tokio::test]
async fn unknown_paths_and_verbs() {
    let azure = AzureScheduledEvents::start().await;
    let unknown = "/metadata/instance/network?api-version=2021-02-01";
    assert_eq!(
        raw::get(azure.endpoint(), unknown, &[METADATA])
            .await
            .status,
        404
    );
    let put = raw::send(azure.endpoint(), "PUT", EVENTS, &[METADATA], "{}").await;
    assert_eq!(put.status, 405);
    azure.stop().await;
}

#[tokio::test]
async fn overrides_misbehave_once() {
    let azure = AzureScheduledEvents::start().await;
    azure.override_next(
        "/metadata/scheduledevents",
        Response::json("").with_header("x", "y"),
    );
    azure.override_next(
        "/metadata/scheduledevents",
        Response::status(429, r#"{"error":"Too many requests"}"#),
    );
    assert!(events(&azure).await.body.is_empty());
    assert_eq!(events(&azure).await.status, 429);
    assert_eq!(events(&azure).await.json(), docs(DOCS_INCARNATION_1));
    assert_eq!(azure.requests().len(), 3);
    azure.stop().await;
}
