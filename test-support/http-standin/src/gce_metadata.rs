//! A stand-in for Compute Engine's metadata server (`computeMetadata/v1/`), as its
//! documentation describes it:
//!
//! - [View and query VM metadata](https://cloud.google.com/compute/docs/metadata/querying-metadata):
//!   every request carries `Metadata-Flavor: Google` or is refused, and one carrying
//!   `X-Forwarded-For` is refused too (both `403`, as the [troubleshooting
//!   page](https://cloud.google.com/compute/docs/troubleshooting/troubleshoot-metadata-server)
//!   lists for requests that fail its security checks); values come back as text
//!   (`Content-Type: application/text`) with the `Metadata-Flavor: Google` and `ETag` headers;
//!   `?wait_for_change=true` is a hanging GET that answers once the value changes, at once when
//!   `last_etag` names another version than the current one, and with the current value after
//!   `timeout_sec` seconds; an unknown key is `404`.
//! - [Query the metadata server for maintenance event
//!   notices](https://cloud.google.com/compute/docs/metadata/getting-live-migration-notice):
//!   `instance/maintenance-event` is `NONE` until an event is coming, then
//!   `MIGRATE_ON_HOST_MAINTENANCE` or `TERMINATE_ON_HOST_MAINTENANCE`; the page's sample
//!   waits on it starting from `last_etag=0` and retries the `503` the server may answer
//!   during maintenance.
//! - [Create and use preemptible
//!   VMs](https://cloud.google.com/compute/docs/instances/create-use-preemptible) (and Spot
//!   VMs): `instance/preempted` is `FALSE`, and `TRUE` once the VM is being preempted.
//!
//! Each key's value has its own ETag, a new one each time [`GceMetadata::set`] changes the
//! value (setting the same value again is no change). A client points at the stand-in with
//! `GCE_METADATA_HOST=`[`host()`](GceMetadata::host), as Google's client libraries read it.
//!
//! Not modelled: directory listings, `?recursive=true` and `?alt=json`, service-account tokens,
//! and the error pages' HTML (the bodies here are short placeholders).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::stand_in::StandIn;
use crate::{Request, Response};

/// The path every metadata key is under.
pub const PREFIX: &str = "/computeMetadata/v1/";

/// The values a new stand-in holds, keys relative to [`PREFIX`].
pub const DEFAULTS: &[(&str, &str)] = &[
    ("instance/preempted", "FALSE"),
    ("instance/maintenance-event", "NONE"),
    ("instance/name", "tf-worker-0"),
    (
        "instance/hostname",
        "tf-worker-0.us-central1-a.c.ml-research-4815.internal",
    ),
    ("instance/id", "4520031799277581759"),
    ("instance/zone", "projects/123456789012/zones/us-central1-a"),
    ("project/project-id", "ml-research-4815"),
    ("project/numeric-project-id", "123456789012"),
];

/// The body of the `403` for a request without `Metadata-Flavor: Google`.
const MISSING_FLAVOR: &str = "Missing Metadata-Flavor:Google header.";

/// A running stand-in for the GCE metadata server; [`stop`](Self::stop) it at the end of the
/// test.
pub struct GceMetadata {
    stand_in: StandIn,
    state: Arc<State>,
}

struct State {
    values: Mutex<Values>,
    /// Bumped on every change, so hanging GETs look again.
    changed: watch::Sender<u64>,
}

struct Values {
    by_key: HashMap<String, Entry>,
    /// How many ETags have been handed out: the seed of the next.
    etags: u64,
}

#[derive(Clone)]
struct Entry {
    value: Vec<u8>,
    etag: String,
}

impl GceMetadata {
    /// Starts a stand-in on 127.0.0.1 with an OS-chosen port, holding [`DEFAULTS`].
    pub async fn start() -> Self {
        let mut values = Values {
            by_key: HashMap::new(),
            etags: 0,
        };
        for (key, value) in DEFAULTS {
            values.put(key, value.as_bytes().to_vec());
        }
        let state = Arc::new(State {
            values: Mutex::new(values),
            changed: watch::channel(0).0,
        });
        let handler_state = Arc::clone(&state);
        let stand_in = StandIn::start(move |request| answer(&handler_state, request)).await;
        Self { stand_in, state }
    }

    /// `127.0.0.1:<port>`: what a client puts in `GCE_METADATA_HOST`.
    pub fn host(&self) -> &str {
        self.url().trim_start_matches("http://")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        self.stand_in.url()
    }

    /// Sets key `path` (relative to [`PREFIX`], e.g. `instance/preempted`) to `value`, with a
    /// new ETag, and answers the hanging GETs waiting on it. The same value again changes
    /// nothing. Any bytes will do, garbage included.
    pub fn set(&self, path: &str, value: impl Into<Vec<u8>>) {
        let value = value.into();
        let mut values = self.state.values.lock().expect("metadata values");
        if values.by_key.get(path).is_some_and(|e| e.value == value) {
            return;
        }
        values.put(path, value);
        self.state.changed.send_modify(|n| *n += 1);
    }

    /// Removes key `path`: requests for it get `404`, hanging GETs on it too.
    pub fn remove(&self, path: &str) {
        let mut values = self.state.values.lock().expect("metadata values");
        if values.by_key.remove(path).is_some() {
            self.state.changed.send_modify(|n| *n += 1);
        }
    }

    /// The current ETag of key `path`, if it is set.
    pub fn etag(&self, path: &str) -> Option<String> {
        let values = self.state.values.lock().expect("metadata values");
        values.by_key.get(path).map(|e| e.etag.clone())
    }

    /// Stops the server: open connections, hanging GETs included, are closed unanswered.
    pub async fn stop(self) {
        self.stand_in.stop().await;
    }
}

impl Values {
    /// Sets `key` to `value` under a new ETag.
    fn put(&mut self, key: &str, value: Vec<u8>) {
        self.etags += 1;
        let etag = format!("{:016x}", mix(self.etags));
        self.by_key.insert(key.to_owned(), Entry { value, etag });
    }
}

/// SplitMix64's finalizer: distinct, random-looking ETags from a counter.
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The server's answer to `request`.
fn answer(state: &Arc<State>, request: &Request) -> Response {
    if request.header("x-forwarded-for").is_some() {
        return error(403, "Requests with X-Forwarded-For are refused.");
    }
    if request.header("metadata-flavor") != Some("Google") {
        return error(403, MISSING_FLAVOR);
    }
    if request.method != "GET" {
        return error(405, "Method not allowed.");
    }
    let Some(key) = request.path.strip_prefix(PREFIX) else {
        return error(404, "Not found.");
    };
    let values = state.values.lock().expect("metadata values");
    let Some(entry) = values.by_key.get(key).cloned() else {
        return error(404, "Not found.");
    };
    // The docs' Python sample sends `wait_for_change=True` (requests' rendering of a bool).
    let wait = request
        .query("wait_for_change")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !wait {
        return value(&entry);
    }
    let timeout = match request.query("timeout_sec").map(str::parse::<u64>) {
        None => None,
        Some(Ok(seconds)) => Some(Duration::from_secs(seconds)),
        Some(Err(_)) => return error(400, "timeout_sec is not a whole number of seconds."),
    };
    if request
        .query("last_etag")
        .is_some_and(|last| last != entry.etag)
    {
        return value(&entry);
    }
    // Subscribed under the lock that `set` changes values under: no change is missed.
    let mut changed = state.changed.subscribe();
    drop(values);
    let state = Arc::clone(state);
    let key = key.to_owned();
    Response::later(async move {
        let current = |state: &State| {
            let values = state.values.lock().expect("metadata values");
            values.by_key.get(&key).cloned()
        };
        let change = async {
            loop {
                if changed.changed().await.is_err() {
                    return error(503, "The metadata server is stopping.");
                }
                match current(&state) {
                    None => return error(404, "Not found."),
                    Some(now) if now.etag != entry.etag => return value(&now),
                    Some(_) => {}
                }
            }
        };
        match timeout {
            None => change.await,
            Some(timeout) => match tokio::time::timeout(timeout, change).await {
                Ok(answer) => answer,
                Err(_) => current(&state).map_or_else(|| error(404, "Not found."), |e| value(&e)),
            },
        }
    })
}

/// `200` with a value and its ETag, headers as the metadata server sends them.
fn value(entry: &Entry) -> Response {
    Response::bytes(200, entry.value.clone())
        .with_header("content-type", "application/text")
        .with_header("metadata-flavor", "Google")
        .with_header("etag", &entry.etag)
        .with_header("server", "Metadata Server for VM")
}

/// An error with a short text body (the real server's are HTML pages).
fn error(status: u16, message: &str) -> Response {
    Response::text(status, message)
        .with_header("metadata-flavor", "Google")
        .with_header("server", "Metadata Server for VM")
}

impl std::ops::Deref for GceMetadata {
    type Target = StandIn;

    /// What every metadata stand-in shares: its requests, queued answers, its URL.
    fn deref(&self) -> &StandIn {
        &self.stand_in
    }
}
