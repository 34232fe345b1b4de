//! Whether the process does its job, as its owner says: what `/healthz` answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared flag `/healthz` reads: 200 "ok" while set, 503 otherwise. Each user says what
/// healthy means (an agent while joined or running a round, a rendezvous while it serves) and
/// flips it. Clones share one flag. Starts healthy.
#[derive(Debug, Clone)]
pub struct Health(Arc<AtomicBool>);

impl Default for Health {
    fn default() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
    }
}

impl Health {
    /// A flag, healthy.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets whether the process does its job.
    pub fn set(&self, healthy: bool) {
        self.0.store(healthy, Ordering::Relaxed);
    }

    /// Whether it does.
    pub fn is_healthy(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
