//! [`StandIn`]: what the metadata stand-ins share — a server answering by its cloud's rules,
//! its requests recorded, and answers queued to replace those rules' for client robustness
//! tests: a `503` as a metadata server gives during its own maintenance, a garbage or huge
//! body, a server that never answers ([`Response::later`] of a pending future). Each cloud's
//! stand-in derefs to it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::{HttpServer, Request, Response};

/// A running metadata stand-in: its server and the answers queued to replace its own.
pub struct StandIn {
    server: HttpServer,
    overrides: Arc<Overrides>,
}

/// Per request path, the answers to send instead of the stand-in's own, oldest first.
#[derive(Debug, Default)]
struct Overrides(Mutex<HashMap<String, VecDeque<Response>>>);

impl StandIn {
    /// Starts a server on 127.0.0.1 with an OS-chosen port answering with `answer`, but for
    /// the answers [`override_next`](Self::override_next) queues.
    pub(crate) async fn start(
        answer: impl Fn(&Request) -> Response + Send + Sync + 'static,
    ) -> Self {
        let overrides = Arc::new(Overrides::default());
        let queued = Arc::clone(&overrides);
        let server = HttpServer::start(move |request| {
            queued
                .take(&request.path)
                .unwrap_or_else(|| answer(request))
        })
        .await;
        Self { server, overrides }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// Answers the next request to URL path `path` (as sent, without the query, e.g.
    /// `/computeMetadata/v1/instance/preempted`, `/latest/api/token`,
    /// `/metadata/scheduledevents`) with `response` instead, whatever its headers: a `503`,
    /// a `429`, a garbage or huge body, or a server that never answers
    /// (`Response::later(std::future::pending())`). Several queue up, oldest first.
    pub fn override_next(&self, path: &str, response: Response) {
        self.overrides.push(path, response);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// Waits until at least `count` requests have arrived, long polls counted once parked
    /// (see [`HttpServer::wait_for_requests`]).
    pub async fn wait_for_requests(&self, count: usize) {
        self.server.wait_for_requests(count).await;
    }

    /// Stops the server: open connections, long polls included, are closed unanswered.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

impl Overrides {
    /// Queues `response` for the next request to `path` that finds no earlier answer queued.
    fn push(&self, path: &str, response: Response) {
        self.0
            .lock()
            .expect("overrides")
            .entry(path.to_owned())
            .or_default()
            .push_back(response);
    }

    /// The answer queued for `path`, if any, taken off the queue.
    fn take(&self, path: &str) -> Option<Response> {
        self.0
            .lock()
            .expect("overrides")
            .get_mut(path)
            .and_then(VecDeque::pop_front)
    }
}
