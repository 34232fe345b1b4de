//! GCE's notices: `instance/preempted` (`TRUE` about 30 s before a spot or preemptible VM
//! is stopped) and `instance/maintenance-event` (`TERMINATE_ON_HOST_MAINTENANCE` before a
//! host maintenance that stops the VM; `MIGRATE_ON_HOST_MAINTENANCE` keeps it running).
//! Each is read once, then long-polled with `?wait_for_change=true&last_etag=E`, so a change
//! is seen when it happens, not at the next poll; every request carries `Metadata-Flavor:
//! Google`. (TensorFlow's own handler polls only `maintenance-event`, every second.)

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyper::Method;

use crate::board::{Board, Trouble, chain, quote};
use crate::http::Http;
use crate::watcher::Timing;
use crate::{Cloud, Notice, NoticeKind};

/// What GCE documents as a preemption's warning: `preempted` turns `TRUE` 30 s before the
/// VM is stopped.
pub const PREEMPTION_WARNING: Duration = Duration::from_secs(30);

/// What GCE documents as a maintenance event's warning: `maintenance-event` changes 60 s
/// before the event.
pub const MAINTENANCE_WARNING: Duration = Duration::from_secs(60);

/// The keys watched.
const KEYS: [&str; 2] = ["instance/preempted", "instance/maintenance-event"];

/// Watches both keys until dropped.
pub(crate) async fn watch(http: Http, base: String, board: Arc<Board>, timing: Timing) {
    let [preempted, maintenance] =
        KEYS.map(|key| watch_key(http.clone(), base.clone(), key, Arc::clone(&board), timing));
    tokio::join!(preempted, maintenance);
}

async fn watch_key(http: Http, base: String, key: &'static str, board: Arc<Board>, timing: Timing) {
    let mut trouble = Trouble::new(Cloud::Gce, key);
    let mut etag: Option<String> = None;
    let mut value: Option<String> = None;
    loop {
        let (url, deadline) = match &etag {
            Some(etag) => (
                format!(
                    "{base}/computeMetadata/v1/{key}?wait_for_change=true&last_etag={etag}&timeout_sec={}",
                    timing.long_poll.as_secs()
                ),
                timing.long_poll + timing.request,
            ),
            None => (format!("{base}/computeMetadata/v1/{key}"), timing.request),
        };
        let answer = http
            .send(
                Method::GET,
                &url,
                &[("Metadata-Flavor", "Google")],
                None,
                deadline,
            )
            .await;
        match answer {
            Ok(answer) if answer.status == 200 => {
                trouble.ok();
                let text = answer.body.trim().to_owned();
                if value.as_ref() != Some(&text) {
                    board.set(key, notice(key, &text, &mut trouble));
                    value = Some(text);
                }
                // An ETag fit for a URL lets the next read wait for a change; without one
                // (a server that is not GCE's), the key is polled.
                etag = answer.etag.filter(|e| {
                    e.len() <= 64
                        && e.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                });
                if etag.is_none() {
                    tokio::time::sleep(timing.poll).await;
                }
            }
            Ok(answer) => {
                trouble.failed(format!(
                    "answered {}: {}",
                    answer.status,
                    quote(&answer.body)
                ));
                etag = None;
                tokio::time::sleep(timing.retry).await;
            }
            Err(e) => {
                trouble.failed(chain(&e));
                etag = None;
                tokio::time::sleep(timing.retry).await;
            }
        }
    }
}

/// What `key`'s value `text` announces.
fn notice(key: &'static str, text: &str, trouble: &mut Trouble) -> Option<Notice> {
    let (kind, warning) = match (key, text) {
        ("instance/preempted", "TRUE") => (NoticeKind::Preemption, PREEMPTION_WARNING),
        ("instance/maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE") => {
            (NoticeKind::Maintenance, MAINTENANCE_WARNING)
        }
        ("instance/preempted", "FALSE")
        | ("instance/maintenance-event", "NONE" | "MIGRATE_ON_HOST_MAINTENANCE") => return None,
        _ => {
            trouble.failed(format!("unexpected value {}", quote(text)));
            return None;
        }
    };
    Some(Notice {
        cloud: Cloud::Gce,
        kind,
        deadline: Some(SystemTime::now() + warning),
        source: key,
        event_id: None,
        detail: text.to_owned(),
    })
}
