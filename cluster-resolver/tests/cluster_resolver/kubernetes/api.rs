//! A stand-in for the pods API as kube-apiserver serves list and watch: the `app=w` pods at a
//! resourceVersion, each watch an open stream the test writes to or ends, and a watch history
//! that starts at `oldest`: a watch from an older resourceVersion is answered `410 Expired`,
//! as an `ERROR` event on a stream then ended (kube-apiserver's way) or, if the test asks, as
//! the HTTP answer itself. Any other selector lists nothing and its watches stay quiet.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::broadcast;

use http_standin::kubernetes::{self, expired, expired_event};
use http_standin::{HttpServer, Request, Response};

/// The selector whose pods the stand-in holds.
pub(super) const SELECTOR: &str = "app=w";

/// How long a test waits for the resolver's next request.
const PROMPT: Duration = Duration::from_secs(10);

/// How a watch from a resourceVersion before the history is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// `200 OK`, one `ERROR` event with the `Expired` status, and the stream's end: what
    /// kube-apiserver does (cacher.go's `Watch`).
    ErrorEvent,
    /// `410 Gone` with the `Expired` status as the body.
    HttpGone,
}

/// What the stand-in holds.
pub(super) struct State {
    /// The `app=w` pods a listing returns.
    pub(super) pods: Vec<Value>,
    /// The listing's resourceVersion.
    pub(super) version: u32,
    /// The first resourceVersion a watch may start from.
    pub(super) oldest: u32,
    pub(super) expiry: Expiry,
    /// The open `app=w` watches, oldest first; dropping one's sender ends that watch.
    watches: Vec<broadcast::Sender<String>>,
    /// Kept so the other selectors' watches stay open.
    quiet: broadcast::Sender<String>,
}

/// The server and a handle on its state.
pub(super) struct Api {
    pub(super) server: HttpServer,
    state: Arc<Mutex<State>>,
}

impl Api {
    /// Serves `pods` at resourceVersion `version`, with a watch history from `version` on.
    pub(super) async fn start(pods: Vec<Value>, version: u32, expiry: Expiry) -> Self {
        let state = Arc::new(Mutex::new(State {
            pods,
            version,
            oldest: version,
            expiry,
            watches: Vec::new(),
            quiet: broadcast::channel(1).0,
        }));
        let shared = Arc::clone(&state);
        let server =
            HttpServer::start(move |request| answer(&mut shared.lock().unwrap(), request)).await;
        Self { server, state }
    }

    /// The state, to change what the next requests get.
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Sends `line` on the newest `app=w` watch.
    pub(super) fn send(&self, line: String) {
        let state = self.state();
        let watch = state.watches.last().expect("an open watch");
        watch.send(line).expect("the watch is open");
    }

    /// Ends the newest `app=w` watch, as the server does at its `timeoutSeconds`.
    pub(super) fn end_watch(&self) {
        self.state().watches.pop().expect("an open watch");
    }

    /// The `app=w` requests so far: listings, or watches.
    pub(super) fn requests(&self, watch: bool) -> Vec<Request> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                r.query("labelSelector") == Some(SELECTOR)
                    && (r.query("watch") == Some("true")) == watch
            })
            .collect()
    }

    /// Waits until `n` `app=w` watches have been asked for, so lines sent now reach the last.
    pub(super) async fn watching(&self, n: usize) {
        let deadline = Instant::now() + PROMPT;
        while self.requests(true).len() < n {
            assert!(Instant::now() < deadline, "watch {n} was not asked for");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub(super) async fn stop(self) {
        self.server.stop().await;
    }
}

fn answer(state: &mut State, request: &Request) -> Response {
    let ours = request.query("labelSelector") == Some(SELECTOR);
    if request.query("watch") != Some("true") {
        let pods = if ours { state.pods.clone() } else { Vec::new() };
        return Response::json(kubernetes::pod_list(pods, state.version));
    }
    if !ours {
        return Response::lines(&state.quiet);
    }
    let from = request
        .query("resourceVersion")
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    if from < state.oldest {
        return match state.expiry {
            Expiry::ErrorEvent => Response::ended_lines(vec![expired_event(from, state.oldest)]),
            Expiry::HttpGone => Response::status(410, expired(from, state.oldest)),
        };
    }
    let (watch, _) = broadcast::channel(64);
    let response = Response::lines(&watch);
    state.watches.push(watch);
    response
}
