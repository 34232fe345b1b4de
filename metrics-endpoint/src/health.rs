//! Whether the process does its job, as its owner says: what `/healthz` answers.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `/healthz` reads: 200 "ok" while healthy, 503 otherwise. Each user says what healthy
/// means (an agent while it is in its job, a rendezvous while it serves): a flag it
/// [`set`](Self::set)s, and optionally a check asked at each request
/// ([`from_fn`](Self::from_fn)); healthy when both say so. Clones share both. Starts healthy.
#[derive(Clone)]
pub struct Health {
    flag: Arc<AtomicBool>,
    check: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            flag: Arc::new(AtomicBool::new(true)),
            check: None,
        }
    }
}

impl fmt::Debug for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Health")
            .field("healthy", &self.is_healthy())
            .finish()
    }
}

impl Health {
    /// A flag, healthy.
    pub fn new() -> Self {
        Self::default()
    }

    /// Healthy while `check` says so (and the flag is set), asked at each `/healthz`.
    pub fn from_fn(check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self {
            check: Some(Arc::new(check)),
            ..Self::default()
        }
    }

    /// Sets whether the process does its job.
    pub fn set(&self, healthy: bool) {
        self.flag.store(healthy, Ordering::Relaxed);
    }

    /// Whether it does.
    pub fn is_healthy(&self) -> bool {
        self.flag.load(Ordering::Relaxed) && self.check.as_ref().is_none_or(|check| check())
    }
}
