//! A stand-in for the EC2 instance metadata service, version 2 (IMDSv2) only, as the Amazon EC2
//! User Guide describes it:
//!
//! - [Use IMDSv2](https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html):
//!   a session starts with `PUT /latest/api/token` carrying `X-aws-ec2-metadata-token-ttl-seconds`
//!   (one second to six hours, 21,600 s), which answers a token; every `GET` carries it in
//!   `X-aws-ec2-metadata-token`, and "requests without a valid token or with an expired token
//!   receive a `401 - Unauthorized`" (the instance requires tokens, `HttpTokens=required`, so a
//!   tokenless IMDSv1 `GET` gets `401` too); "`PUT` requests are rejected if they contain an
//!   X-Forwarded-For header".
//! - [Retrieve instance metadata](https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html):
//!   metadata is `text/plain`; a missing item is `404`; a path ending in `/` lists what is
//!   under it, one item a line; `400` for a `PUT` that is not valid, `401` for an invalid
//!   token, `403` for a request not allowed, a `PUT` to a version-specific path such as
//!   `/2021-03-23/api/token` among them.
//! - [Spot Instance interruption notices](https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html):
//!   `spot/instance-action` is absent (`404`) until the instance is marked to stop or
//!   terminate, then `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`; for a
//!   termination, the older `spot/termination-time` holds the same time.
//! - [EC2 instance rebalance recommendations](https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html):
//!   `events/recommendations/rebalance` is absent (`404`) until the signal, then
//!   `{"noticeTime": "2020-10-27T08:22:00Z"}`.
//! - [Scheduled events for your instances](https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instances-status-check_sched.html):
//!   `events/maintenance/scheduled` is a JSON array of events (`NotBefore`, `Code`,
//!   `Description`, `EventId`, `NotAfter`, `State`). The docs show only an instance with
//!   events; with none the stand-in answers `[]`.
//!
//! The SDKs' endpoint override, `AWS_EC2_METADATA_SERVICE_ENDPOINT`, takes
//! [`endpoint()`](Ec2Imds::endpoint). Tokens are opaque strings valid for their TTL on this
//! stand-in only; the response to the `PUT` repeats the TTL in
//! `X-aws-ec2-metadata-token-ttl-seconds`, as the service does and the Go SDK reads.
//!
//! Not modelled: IMDSv1 (token optional), the response hop limit, throttling, `/latest/dynamic`
//! and `/latest/user-data`, IAM credentials; error bodies are short placeholders.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stand_in::StandIn;
use crate::{Request, Response};

/// Where the metadata items are, relative to [`endpoint()`](Ec2Imds::endpoint).
pub const META_DATA: &str = "/latest/meta-data/";

/// Where a session token is made (with `PUT`).
pub const TOKEN_PATH: &str = "/latest/api/token";

/// The longest token TTL the service grants: six hours.
pub const MAX_TTL_SECONDS: u64 = 21_600;

/// The items a new stand-in holds, paths relative to [`META_DATA`] (values from the docs'
/// examples).
pub const DEFAULTS: &[(&str, &str)] = &[
    ("instance-id", "i-1234567890abcdef0"),
    ("ami-id", "ami-0abcdef1234567890"),
    ("reservation-id", "r-0efghijk987654321"),
    ("local-hostname", "ip-10-251-50-12.ec2.internal"),
    ("instance-life-cycle", "spot"),
    ("events/maintenance/scheduled", "[]"),
];

/// A running stand-in for IMDSv2; [`stop`](Self::stop) it at the end of the test.
pub struct Ec2Imds {
    stand_in: StandIn,
    state: Arc<State>,
}

struct State {
    inner: Mutex<Inner>,
}

struct Inner {
    /// Metadata items by path relative to [`META_DATA`].
    items: HashMap<String, String>,
    /// Valid tokens and when each expires.
    tokens: HashMap<String, Instant>,
    /// Tokens handed out since the start.
    issued: usize,
}

impl Ec2Imds {
    /// Starts a stand-in on 127.0.0.1 with an OS-chosen port, holding [`DEFAULTS`], no spot
    /// interruption, no rebalance recommendation and no scheduled event.
    pub async fn start() -> Self {
        let items = DEFAULTS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let state = Arc::new(State {
            inner: Mutex::new(Inner {
                items,
                tokens: HashMap::new(),
                issued: 0,
            }),
        });
        let handler_state = Arc::clone(&state);
        let stand_in = StandIn::start(move |request| answer(&handler_state, request)).await;
        Self { stand_in, state }
    }

    /// `http://127.0.0.1:<port>`: what AWS SDKs read from `AWS_EC2_METADATA_SERVICE_ENDPOINT`.
    pub fn endpoint(&self) -> &str {
        self.stand_in.url()
    }

    /// Sets item `path` (relative to [`META_DATA`], e.g. `instance-id`) to `value`.
    pub fn set(&self, path: &str, value: impl Into<String>) {
        self.inner().items.insert(path.to_owned(), value.into());
    }

    /// Removes item `path`: requests for it get `404`.
    pub fn remove(&self, path: &str) {
        self.inner().items.remove(path);
    }

    /// Marks the instance to be interrupted, with a notice like the docs'
    /// `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}` (`spot/instance-action`,
    /// and for `terminate` the time in `spot/termination-time`), or with `None` clears both.
    pub fn set_spot_instance_action(&self, notice: Option<Value>) {
        let mut inner = self.inner();
        inner.items.remove("spot/termination-time");
        let Some(notice) = notice else {
            inner.items.remove("spot/instance-action");
            return;
        };
        if notice["action"] == "terminate"
            && let Some(time) = notice["time"].as_str()
        {
            inner
                .items
                .insert("spot/termination-time".to_owned(), time.to_owned());
        }
        inner
            .items
            .insert("spot/instance-action".to_owned(), notice.to_string());
    }

    /// Emits a rebalance recommendation like the docs' `{"noticeTime": "2020-10-27T08:22:00Z"}`
    /// (`events/recommendations/rebalance`), or with `None` withdraws it.
    pub fn set_rebalance(&self, notice: Option<Value>) {
        let path = "events/recommendations/rebalance";
        match notice {
            Some(notice) => self.set(path, notice.to_string()),
            None => self.remove(path),
        }
    }

    /// The active maintenance events, a JSON array as `events/maintenance/scheduled` serves it
    /// (`json!([])` for none).
    pub fn set_scheduled_maintenance(&self, events: Value) {
        self.set("events/maintenance/scheduled", events.to_string());
    }

    /// Makes every token issued so far invalid: the next `GET` with one gets `401`.
    pub fn expire_tokens(&self) {
        self.inner().tokens.clear();
    }

    /// How many tokens the stand-in has issued.
    pub fn tokens_issued(&self) -> usize {
        self.inner().issued
    }

    /// Stops the server and closes open connections.
    pub async fn stop(self) {
        self.stand_in.stop().await;
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.state.inner.lock().expect("IMDS state")
    }
}

/// The service's answer to `request`.
fn answer(state: &State, request: &Request) -> Response {
    let mut inner = state.inner.lock().expect("IMDS state");
    match request.method.as_str() {
        "PUT" => put(&mut inner, request),
        "GET" | "HEAD" => get(&inner, request),
        _ => text(405, "Method Not Allowed"),
    }
}

/// `PUT /latest/api/token`: a new session token.
fn put(inner: &mut Inner, request: &Request) -> Response {
    if request.header("x-forwarded-for").is_some() || request.path != TOKEN_PATH {
        return text(403, "Forbidden");
    }
    let ttl = request
        .header("x-aws-ec2-metadata-token-ttl-seconds")
        .and_then(|ttl| ttl.parse::<u64>().ok())
        .filter(|ttl| (1..=MAX_TTL_SECONDS).contains(ttl));
    let Some(ttl) = ttl else {
        return text(400, "Bad Request");
    };
    inner.issued += 1;
    let token = token(inner.issued);
    inner
        .tokens
        .insert(token.clone(), Instant::now() + Duration::from_secs(ttl));
    text(200, &token).with_header("x-aws-ec2-metadata-token-ttl-seconds", &ttl.to_string())
}

/// `GET /latest/meta-data/...` with a valid token: an item, or a listing for a path ending
/// in `/`.
fn get(inner: &Inner, request: &Request) -> Response {
    let valid = request
        .header("x-aws-ec2-metadata-token")
        .and_then(|token| inner.tokens.get(token))
        .is_some_and(|expiry| Instant::now() < *expiry);
    if !valid {
        return text(401, "Unauthorized");
    }
    if request.path == TOKEN_PATH {
        return text(405, "Method Not Allowed");
    }
    let Some(path) = request.path.strip_prefix(META_DATA) else {
        return text(404, "Not Found");
    };
    if path.is_empty() || path.ends_with('/') {
        return listing(inner, path);
    }
    match inner.items.get(path) {
        Some(value) => text(200, value),
        None => text(404, "Not Found"),
    }
}

/// What is under directory `dir` (empty for the top), one item a line, directories with a
/// trailing `/`.
fn listing(inner: &Inner, dir: &str) -> Response {
    let children: BTreeSet<String> = inner
        .items
        .keys()
        .filter_map(|key| key.strip_prefix(dir))
        .map(|rest| match rest.split_once('/') {
            Some((child, _)) => format!("{child}/"),
            None => rest.to_owned(),
        })
        .collect();
    if children.is_empty() {
        return text(404, "Not Found");
    }
    text(200, &children.into_iter().collect::<Vec<_>>().join("\n"))
}

/// The `n`th token: opaque, 56 characters, like the service's.
fn token(n: usize) -> String {
    let seed = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!(
        "AQAEA{:016x}{:016x}{:017x}==",
        seed,
        seed.rotate_left(17) ^ 0x5bd1_e995,
        seed.rotate_left(41)
    )
}

/// `text/plain`, as every IMDS answer is.
fn text(status: u16, body: &str) -> Response {
    Response::text(status, body)
}

impl std::ops::Deref for Ec2Imds {
    type Target = StandIn;

    /// What every metadata stand-in shares: its requests, queued answers, its URL.
    fn deref(&self) -> &StandIn {
        &self.stand_in
    }
}
