//! [`TaskServerMetrics`]: what a TaskServer counts for Prometheus (`tfcluster serve
//! --metrics`): the contexts it holds, its open connections and its refusals by limit (the
//! connection and memory limits counted by `grpc-guard`, the contexts limits here).
//!
//! No label has unbounded values: `limit` is one of a fixed set of names; never a context
//! id, address or error string.

use grpc_guard::GuardMetrics;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The contexts limits, as `tfcluster_taskserver_refusals_total` labels them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContextLimit {
    /// Every context held has a keep-alive, and the table is full.
    MaxContexts,
    /// The contexts' device names would pass their memory.
    ContextMemory,
}

impl ContextLimit {
    fn label(self) -> &'static str {
        match self {
            Self::MaxContexts => "max_contexts",
            Self::ContextMemory => "context_memory",
        }
    }
}

/// A TaskServer's metrics; clones count into the same ones. Register them with
/// [`register`](Self::register) and give them to
/// [`TaskServerBuilder::with_metrics`](crate::TaskServerBuilder::with_metrics). The default
/// counts into metrics no registry holds.
///
/// The metrics are listed in the crate's docs ("Metrics").
#[derive(Clone, Debug, Default)]
pub struct TaskServerMetrics {
    contexts: Gauge,
    guard: GuardMetrics,
}

impl TaskServerMetrics {
    /// Registers the TaskServer's metrics into `registry` (once); a server given them before
    /// counts from its start either way.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "tfcluster_taskserver_contexts",
            "Eager contexts the TaskServer holds",
            self.contexts.clone(),
        );
        self.guard
            .register(registry, "tfcluster_taskserver", "TaskServer");
    }

    /// The contexts held now, as the gauge says.
    pub fn contexts(&self) -> i64 {
        self.contexts.get()
    }

    /// The refusals counted under `limit` (a label value, e.g. `max_contexts`) so far.
    pub fn refusals(&self, limit: &'static str) -> u64 {
        self.guard.refusals(limit)
    }

    /// What `grpc-guard` counts for this server.
    pub(crate) fn guard(&self) -> &GuardMetrics {
        &self.guard
    }

    pub(crate) fn set_contexts(&self, contexts: usize) {
        self.contexts
            .set(i64::try_from(contexts).unwrap_or(i64::MAX));
    }

    pub(crate) fn refused(&self, limit: ContextLimit) {
        self.guard.refused(limit.label());
    }
}
