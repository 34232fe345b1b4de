//! [`Memory`]: the built-in store, the registry in this process, changed under a lock, a call
//! waiting on its job's change notification.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::registry::{Refusal, Registry, Settings};
use super::{CallError, Credentials, Store};
use crate::job_status::JobSummary;

/// The registry in this process; cheap to clone (clones share it).
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    registry: Arc<Mutex<Registry>>,
    poll_cap: Duration,
    shutdown: watch::Receiver<bool>,
}

impl Memory {
    /// An empty registry of `settings`, long polls held at most `poll_cap`; when `shutdown`
    /// turns true, every long poll answers unavailable at once.
    pub(crate) fn new(
        settings: Settings,
        poll_cap: Duration,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            registry: Arc::new(Mutex::new(Registry::new(settings))),
            poll_cap,
            shutdown,
        }
    }

    /// What the clock does to the jobs at `now` (see [`Registry::tick`]).
    pub(crate) fn tick(&self, now: Instant) {
        lock(&self.registry).tick(now);
    }
}

/// The registry; a panic while it was held cannot leave it half changed in a way that matters
/// more than stopping the service would, so a poisoned lock is used as is.
fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Store for Memory {
    async fn long_poll<T, F>(
        &self,
        rdzv_id: &str,
        _node: Option<&str>,
        deadline: Instant,
        mut check: F,
    ) -> Result<T, CallError>
    where
        T: Send,
        F: FnMut(&mut Registry, Instant) -> Result<(T, bool), Refusal> + Send,
    {
        let mut shutdown = self.shutdown.clone();
        loop {
            // The receiver is taken under the same lock as the state it follows, so no change
            // between the two is missed.
            let (answer, wait, changed) = {
                let mut registry = lock(&self.registry);
                let (answer, wait) = check(&mut registry, Instant::now())?;
                (answer, wait, registry.subscribe(rdzv_id))
            };
            let Some(mut changed) = changed.filter(|_| wait && Instant::now() < deadline) else {
                return Ok(answer);
            };
            tokio::select! {
                _ = changed.changed() => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
                _ = shutdown.wait_for(|stopping| *stopping) => {
                    return Err(CallError::Unavailable(
                        "the rendezvous is shutting down".to_owned(),
                    ));
                }
            }
        }
    }

    async fn list_jobs(&self, credentials: &Credentials) -> Result<Vec<JobSummary>, CallError> {
        Ok(lock(&self.registry).summaries(credentials))
    }

    fn poll_cap(&self) -> Duration {
        self.poll_cap
    }

    fn default_host(&self, peer: Option<SocketAddr>) -> Option<String> {
        peer.map(|a| a.ip().to_canonical().to_string())
    }
}
