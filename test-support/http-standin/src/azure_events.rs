//! A stand-in for the Azure Instance Metadata Service's Scheduled Events, as Microsoft's
//! documentation describes them:
//!
//! - [Azure Metadata Service: Scheduled Events for Linux
//!   VMs](https://learn.microsoft.com/azure/virtual-machines/linux/scheduled-events):
//!   `GET /metadata/scheduledevents?api-version=2020-07-01` answers
//!   `{"DocumentIncarnation": N, "Events": [...]}`, each event with `EventId`, `EventType`
//!   (`Reboot`, `Redeploy`, `Freeze`, `Preempt`, `Terminate`), `ResourceType`
//!   (`VirtualMachine`), `Resources`, `EventStatus` (`Scheduled`, `Started`), `NotBefore`
//!   (`Mon, 19 Sep 2016 18:29:47 GMT`), `Description`, `EventSource` and `DurationInSeconds`;
//!   the incarnation "increases when the events array changes"; a `POST` of
//!   `{"StartRequests": [{"EventId": ...}]}` approves events, "`200` if it's passed a valid
//!   event ID", `400` when "the request header or payload was malformed". Once approved by every
//!   VM it affects, "Azure generates a new scheduled event payload with EventStatus:\"Started\"",
//!   and the page's example document then has `"NotBefore": ""`; the stand-in stands for a VM
//!   alone, so an approved event is `Started` at once (a new incarnation), and it leaves the
//!   list when the test [completes](AzureScheduledEvents::complete) it, as an event does when
//!   it reaches a terminal state.
//! - [Azure Instance Metadata
//!   Service](https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service):
//!   requests "must contain the header `Metadata: true`" and "must not contain an
//!   `X-Forwarded-For` header"; without the header the answer is `400 Bad Request`, "Required
//!   metadata header not specified"; the `api-version` parameter is mandatory (without a
//!   supported one, `400` with the `newest-versions` document the page shows); duplicate query
//!   parameters are rejected; a leaf such as `/metadata/instance/compute/name` needs
//!   `format=text`; an unknown element is `404`, an unsupported verb `405`.
//!
//! Choices where the docs say nothing: a request with `X-Forwarded-For` gets `400`; a `POST`
//! naming an event the service does not hold gets `400` (its EventIds are still recorded in
//! [`acknowledged`](AzureScheduledEvents::acknowledged)); error bodies other than the two
//! documented ones are short placeholders. Not modelled: the first call's delay of up to two
//! minutes, rate limiting (`429`), and the rest of `/metadata/instance`.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::stand_in::StandIn;
use crate::{Request, Response};

/// The Scheduled Events endpoint's path.
pub const SCHEDULED_EVENTS: &str = "/metadata/scheduledevents";

/// The VM name's path (with `format=text`).
pub const COMPUTE_NAME: &str = "/metadata/instance/compute/name";

/// The API versions the stand-in accepts: the Instance Metadata Service's supported list and
/// Scheduled Events' versions, as the docs list them.
pub const API_VERSIONS: &[&str] = &[
    "2025-04-07",
    "2024-07-17",
    "2024-03-15",
    "2023-11-15",
    "2023-07-01",
    "2021-12-13",
    "2021-11-15",
    "2021-11-01",
    "2021-10-01",
    "2021-08-01",
    "2021-05-01",
    "2021-03-01",
    "2021-02-01",
    "2021-01-01",
    "2020-12-01",
    "2020-10-01",
    "2020-09-01",
    "2020-07-15",
    "2020-07-01",
    "2020-06-01",
    "2019-11-01",
    "2019-08-15",
    "2019-08-01",
    "2019-06-04",
    "2019-06-01",
    "2019-04-30",
    "2019-04-01",
    "2019-03-11",
    "2019-02-01",
    "2019-01-01",
    "2018-10-01",
    "2018-04-02",
    "2018-02-01",
    "2017-12-01",
    "2017-11-01",
    "2017-10-01",
    "2017-08-01",
    "2017-04-02",
    "2017-03-01",
];

/// The body of the `400` for a request without `Metadata: true`.
pub const MISSING_HEADER: &str =
    r#"{"error":"Bad request. Required metadata header not specified"}"#;

/// The body of the `400` for a request without a supported `api-version`, as the docs show it.
pub const BAD_API_VERSION: &str = r#"{"error":"Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds","newest-versions":["2025-04-07","2024-07-17","2024-03-15"]}"#;

/// A scheduled event as the docs lay one out: `Scheduled`, platform-initiated, on `resources`,
/// not before `Mon, 19 Sep 2016 18:29:47 GMT` (the docs' example time), lasting 9 seconds.
pub fn event(event_id: &str, event_type: &str, resources: &[&str]) -> Value {
    json!({
        "EventId": event_id,
        "EventType": event_type,
        "ResourceType": "VirtualMachine",
        "Resources": resources,
        "EventStatus": "Scheduled",
        "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT",
        "Description": "Host server is undergoing maintenance.",
        "EventSource": "Platform",
        "DurationInSeconds": 9
    })
}

/// A running stand-in for Azure's Scheduled Events; [`stop`](Self::stop) it at the end of the
/// test.
pub struct AzureScheduledEvents {
    stand_in: StandIn,
    state: Arc<State>,
}

struct State {
    inner: Mutex<Inner>,
}

struct Inner {
    vm_name: String,
    incarnation: u64,
    events: Vec<Value>,
    acknowledged: Vec<String>,
}

impl Inner {
    /// A change to the events: a new incarnation.
    fn changed(&mut self) {
        self.incarnation += 1;
    }
}

impl AzureScheduledEvents {
    /// Starts a stand-in on 127.0.0.1 with an OS-chosen port: VM `vm-0`, no events, at
    /// incarnation 1 (as the docs' example starts).
    pub async fn start() -> Self {
        let state = Arc::new(State {
            inner: Mutex::new(Inner {
                vm_name: "vm-0".to_owned(),
                incarnation: 1,
                events: Vec::new(),
                acknowledged: Vec::new(),
            }),
        });
        let handler_state = Arc::clone(&state);
        let stand_in = StandIn::start(move |request| answer(&handler_state, request)).await;
        Self { stand_in, state }
    }

    /// `http://127.0.0.1:<port>`, standing for `http://169.254.169.254`.
    pub fn endpoint(&self) -> &str {
        self.stand_in.url()
    }

    /// Names the VM (`compute/name`; default `vm-0`).
    pub fn set_vm_name(&self, name: &str) {
        self.inner().vm_name = name.to_owned();
    }

    /// Adds `event` (a document like [`event`]'s) to the list: a new incarnation.
    pub fn schedule(&self, event: Value) {
        let mut inner = self.inner();
        inner.events.push(event);
        inner.changed();
    }

    /// Removes event `event_id`, as when it reaches a terminal state: a new incarnation if it
    /// was there.
    pub fn complete(&self, event_id: &str) {
        let mut inner = self.inner();
        let before = inner.events.len();
        inner.events.retain(|e| e["EventId"] != event_id);
        if inner.events.len() != before {
            inner.changed();
        }
    }

    /// Removes every event: a new incarnation if there were any.
    pub fn clear(&self) {
        let mut inner = self.inner();
        if !inner.events.is_empty() {
            inner.events.clear();
            inner.changed();
        }
    }

    /// The events now listed.
    pub fn events(&self) -> Vec<Value> {
        self.inner().events.clone()
    }

    /// The current `DocumentIncarnation`.
    pub fn incarnation(&self) -> u64 {
        self.inner().incarnation
    }

    /// Every EventId POSTed in a well-formed `StartRequests`, in order.
    pub fn acknowledged(&self) -> Vec<String> {
        self.inner().acknowledged.clone()
    }

    /// Stops the server and closes open connections.
    pub async fn stop(self) {
        self.stand_in.stop().await;
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.state.inner.lock().expect("scheduled events state")
    }
}

/// The service's answer to `request`.
fn answer(state: &State, request: &Request) -> Response {
    if request.header("x-forwarded-for").is_some() {
        return json(
            400,
            r#"{"error":"Bad request. X-Forwarded-For is not allowed"}"#,
        );
    }
    if !request
        .header("metadata")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return json(400, MISSING_HEADER);
    }
    if !request
        .query("api-version")
        .is_some_and(|v| API_VERSIONS.contains(&v))
    {
        return json(400, BAD_API_VERSION);
    }
    let names: Vec<&str> = request.query.iter().map(|(n, _)| n.as_str()).collect();
    if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        return json(400, r#"{"error":"Bad request. Duplicate query parameter"}"#);
    }
    let mut inner = state.inner.lock().expect("scheduled events state");
    match (request.path.as_str(), request.method.as_str()) {
        (SCHEDULED_EVENTS, "GET") => json(200, &document(&inner)),
        (SCHEDULED_EVENTS, "POST") => start_requests(&mut inner, &request.body),
        (COMPUTE_NAME, "GET") if request.query("format") == Some("text") => {
            Response::text(200, &inner.vm_name)
                .with_header("content-type", "text/plain; charset=utf-8")
        }
        (COMPUTE_NAME, "GET") => json(
            400,
            r#"{"error":"Bad request. Leaf nodes need format=text"}"#,
        ),
        (SCHEDULED_EVENTS | COMPUTE_NAME, _) => json(405, r#"{"error":"Method not allowed"}"#),
        _ => json(404, r#"{"error":"Not found"}"#),
    }
}

/// The events document.
fn document(inner: &Inner) -> String {
    json!({"DocumentIncarnation": inner.incarnation, "Events": inner.events}).to_string()
}

/// A `POST` of `{"StartRequests": [{"EventId": ...}, ...]}`: each named event recorded and, if
/// still `Scheduled`, started.
fn start_requests(inner: &mut Inner, body: &str) -> Response {
    let ids: Option<Vec<String>> = serde_json::from_str::<Value>(body).ok().and_then(|body| {
        body.get("StartRequests")?
            .as_array()?
            .iter()
            .map(|start| Some(start.get("EventId")?.as_str()?.to_owned()))
            .collect()
    });
    let Some(ids) = ids else {
        return json(400, r#"{"error":"Bad request. Malformed StartRequests"}"#);
    };
    let mut started = false;
    let mut unknown = false;
    for id in &ids {
        match inner
            .events
            .iter_mut()
            .find(|e| e["EventId"] == id.as_str())
        {
            Some(event) if event["EventStatus"] == "Scheduled" => {
                event["EventStatus"] = json!("Started");
                event["NotBefore"] = json!("");
                started = true;
            }
            Some(_) => {}
            None => unknown = true,
        }
    }
    inner.acknowledged.extend(ids);
    if started {
        inner.changed();
    }
    if unknown {
        return json(400, r#"{"error":"Bad request. Unknown EventId"}"#);
    }
    Response::bytes(200, Vec::new())
}

/// A JSON answer, as IMDS labels them.
fn json(status: u16, body: &str) -> Response {
    Response::status(status, body).with_header("content-type", "application/json; charset=utf-8")
}

impl std::ops::Deref for AzureScheduledEvents {
    type Target = StandIn;

    /// What every metadata stand-in shares: its requests, queued answers, its URL.
    fn deref(&self) -> &StandIn {
        &self.stand_in
    }
}
