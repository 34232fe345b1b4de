//! Azure's notices: the Instance Metadata Service's Scheduled Events
//! (`/metadata/scheduledevents`, header `Metadata: true`), polled. An event names the VMs
//! it touches (`Resources`); those of this VM (its name from
//! `/metadata/instance/compute/name`) of type `Preempt` (a spot VM evicted, at least 30 s
//! ahead; polled every second), `Terminate` (the VM deleted) or `Reboot`/`Redeploy` (maintenance) are notices,
//! `NotBefore` their deadline (empty once started: now). `Freeze` (a pause of seconds that
//! the VM survives) is not. A VM may approve an event early
//! ([`acknowledge`]: `StartRequests`), once its job has moved off.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyper::Method;
use serde_json::Value;

use crate::board::{Board, Trouble, chain, quote};
use crate::http::Http;
use crate::watcher::Timing;
use crate::{Cloud, Notice, NoticeKind, time};

/// The Scheduled Events API version used (the one whose documents carry `EventSource` and
/// `DurationInSeconds`).
pub const SCHEDULED_EVENTS_API: &str = "2020-07-01";

/// The instance metadata API version the VM's name is read with.
const INSTANCE_API: &str = "2021-02-01";

/// The source's name in logs and notices.
const SOURCE: &str = "scheduledevents";

/// The longest wait between polls: a `Preempt` may come only 30 s ahead, and IMDS answers
/// from its cache (it allows 5 requests a second), so once a second costs nothing.
const MAX_POLL: Duration = Duration::from_secs(1);

/// Polls until dropped.
pub(crate) async fn watch(http: Http, base: String, board: Arc<Board>, timing: Timing) {
    let mut trouble = Trouble::new(Cloud::Azure, SOURCE);
    let mut vm: Option<String> = None;
    let mut incarnation: Option<i64> = None;
    loop {
        match poll(&http, &base, timing.request, &mut vm, &mut incarnation).await {
            Ok(Some(notice)) => {
                trouble.ok();
                board.set(SOURCE, notice);
            }
            Ok(None) => trouble.ok(),
            Err(problem) => trouble.failed(problem),
        }
        tokio::time::sleep(timing.poll.min(MAX_POLL)).await;
    }
}

/// One poll: the VM's name if not known yet, then the events document; `Ok(None)` when it
/// did not change (the same `DocumentIncarnation`).
async fn poll(
    http: &Http,
    base: &str,
    deadline: Duration,
    vm: &mut Option<String>,
    incarnation: &mut Option<i64>,
) -> Result<Option<Option<Notice>>, String> {
    let get = |url: String| async move {
        let answer = http
            .send(Method::GET, &url, &[("Metadata", "true")], None, deadline)
            .await
            .map_err(|e| chain(&e))?;
        if answer.status == 200 {
            Ok(answer.body)
        } else {
            Err(format!(
                "{url} answered {}: {}",
                answer.status,
                quote(&answer.body)
            ))
        }
    };
    let name = match vm {
        Some(name) => name.clone(),
        None => {
            let url = format!(
                "{base}/metadata/instance/compute/name?api-version={INSTANCE_API}&format=text"
            );
            let name = get(url).await?.trim().to_owned();
            if name.is_empty() || name.len() > 256 {
                return Err(format!("the VM's name is {}", quote(&name)));
            }
            vm.insert(name).clone()
        }
    };
    let url = format!("{base}/metadata/scheduledevents?api-version={SCHEDULED_EVENTS_API}");
    let body = get(url).await?;
    let document: Value = serde_json::from_str(&body)
        .map_err(|e| format!("the events document is no JSON ({e}): {}", quote(&body)))?;
    let seen = document["DocumentIncarnation"].as_i64();
    if seen.is_some() && seen == *incarnation {
        return Ok(None);
    }
    let notice = read(&document, &name, SystemTime::now())?;
    *incarnation = seen;
    Ok(Some(notice))
}

/// The most urgent notice for VM `name` in an events document.
fn read(document: &Value, name: &str, now: SystemTime) -> Result<Option<Notice>, String> {
    let events = document["Events"].as_array().ok_or_else(|| {
        format!(
            "the events document has no Events list: {}",
            quote(&document.to_string())
        )
    })?;
    let mut nearest: Option<Notice> = None;
    for event in events {
        let ours = event["Resources"]
            .as_array()
            .is_some_and(|vms| vms.iter().any(|vm| vm.as_str() == Some(name)));
        let kind = match event["EventType"].as_str() {
            Some("Preempt") => NoticeKind::Preemption,
            Some("Terminate") => NoticeKind::Termination,
            Some("Reboot" | "Redeploy") => NoticeKind::Maintenance,
            _ => continue,
        };
        if !ours {
            tracing::debug!(vm = name, event = %event, "a scheduled event for other VMs");
            continue;
        }
        let not_before = event["NotBefore"].as_str().unwrap_or_default();
        let deadline = if not_before.trim().is_empty() {
            now
        } else {
            time::http_date(not_before)
                .ok_or_else(|| format!("an event's NotBefore is no date: {}", quote(not_before)))?
        };
        let notice = Notice {
            cloud: Cloud::Azure,
            kind,
            deadline: Some(deadline),
            source: SOURCE,
            event_id: event["EventId"].as_str().map(str::to_owned),
            detail: event["EventType"].as_str().unwrap_or_default().to_owned(),
        };
        if nearest.as_ref().is_none_or(|n| Some(deadline) < n.deadline) {
            nearest = Some(notice);
        }
    }
    Ok(nearest)
}

/// Approves event `event_id` early (`StartRequests`): Azure then goes ahead without waiting
/// for `NotBefore`.
pub(crate) async fn acknowledge(
    http: &Http,
    base: &str,
    event_id: &str,
    deadline: Duration,
) -> Result<(), String> {
    let url = format!("{base}/metadata/scheduledevents?api-version={SCHEDULED_EVENTS_API}");
    let body = serde_json::json!({ "StartRequests": [{ "EventId": event_id }] }).to_string();
    let answer = http
        .send(
            Method::POST,
            &url,
            &[("Metadata", "true"), ("Content-Type", "application/json")],
            Some(body),
            deadline,
        )
        .await
        .map_err(|e| chain(&e))?;
    if answer.status == 200 {
        Ok(())
    } else {
        Err(format!(
            "{url} answered {}: {}",
            answer.status,
            quote(&answer.body)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Scheduled Events documentation's example document.
    const DOCUMENTED: &str = r#"{
        "DocumentIncarnation": 1,
        "Events": [
            {
                "EventId": "A123BC45-1234-5678-AB90-ABCDEF123456",
                "EventStatus": "Scheduled",
                "EventType": "Freeze",
                "ResourceType": "VirtualMachine",
                "Resources": ["WestNO_0", "WestNO_1"],
                "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT",
                "Description": "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
                "EventSource": "Platform",
                "DurationInSeconds": 5
            }
        ]
    }"#;

    fn document(event_type: &str, vms: &[&str], not_before: &str) -> Value {
        let mut document: Value = serde_json::from_str(DOCUMENTED).unwrap();
        document["Events"][0]["EventType"] = event_type.into();
        document["Events"][0]["Resources"] = vms.to_vec().into();
        document["Events"][0]["NotBefore"] = not_before.into();
        document
    }

    #[test]
    fn this_vms_departures_are_notices_and_a_freeze_or_another_vms_is_not() {
        let now = SystemTime::now();
        let at = "Mon, 11 Apr 2022 22:26:58 GMT";
        let doc: Value = serde_json::from_str(DOCUMENTED).unwrap();
        assert_eq!(read(&doc, "WestNO_0", now).unwrap(), None, "a Freeze");
        let preempt = read(&document("Preempt", &["WestNO_0"], at), "WestNO_0", now)
            .unwrap()
            .unwrap();
        assert_eq!(preempt.kind, NoticeKind::Preemption);
        assert_eq!(preempt.deadline, time::http_date(at));
        assert_eq!(
            preempt.event_id.as_deref(),
            Some("A123BC45-1234-5678-AB90-ABCDEF123456")
        );
        let other = document("Preempt", &["WestNO_1"], at);
        assert_eq!(read(&other, "WestNO_0", now).unwrap(), None);
        let started = read(&document("Terminate", &["WestNO_0"], ""), "WestNO_0", now).unwrap();
        assert_eq!(
            started.map(|n| (n.kind, n.deadline)),
            Some((NoticeKind::Termination, Some(now)))
        );
        let reboot = read(&document("Reboot", &["WestNO_0"], at), "WestNO_0", now).unwrap();
        assert_eq!(reboot.map(|n| n.kind), Some(NoticeKind::Maintenance));
    }

    #[test]
    fn a_bad_document_is_a_problem() {
        let now = SystemTime::now();
        assert!(read(&serde_json::json!({"Events": 3}), "vm", now).is_err());
        let bad_date = document("Preempt", &["vm"], "next Tuesday");
        assert!(
            read(&bad_date, "vm", now)
                .unwrap_err()
                .contains("NotBefore is no date")
        );
    }
}
