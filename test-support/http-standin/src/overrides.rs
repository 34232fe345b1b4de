//! Answers queued to replace a metadata stand-in's own, for client robustness tests: a `503`
//! as a metadata server gives during its own maintenance, a garbage or huge body, a server
//! that never answers ([`Response::later`] of a pending future).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::Response;

/// Per request path, the answers to send instead of the stand-in's own, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Overrides(Mutex<HashMap<String, VecDeque<Response>>>);

impl Overrides {
    /// Queues `response` for the next request to `path` (the URL path as sent, without the
    /// query) that finds no earlier answer queued.
    pub(crate) fn push(&self, path: &str, response: Response) {
        self.0
            .lock()
            .expect("overrides")
            .entry(path.to_owned())
            .or_default()
            .push_back(response);
    }

    /// The answer queued for `path`, if any, taken off the queue.
    pub(crate) fn take(&self, path: &str) -> Option<Response> {
        self.0
            .lock()
            .expect("overrides")
            .get_mut(path)
            .and_then(VecDeque::pop_front)
    }
}
