//! [`TaskMetrics`]: what a [`Supervisor`](crate::supervise::Supervisor) counts of its tasks,
//! for `run --local` and the elastic agent alike.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// How a task ended, as `tfcluster_task_exits_total` labels it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub(crate) enum ExitKind {
    /// Exit status 0.
    ok,
    /// A non-zero exit status, or it could not be waited for.
    failed,
    /// A signal nobody here sent ended it.
    signalled,
    /// The watchdog found it hung and killed it.
    hung,
    /// It ended after the supervisor stopped the tasks (a round's end, a signal).
    stopped,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExitLabels {
    status: ExitKind,
}

/// The task families: `tfcluster_task_starts_total`, `tfcluster_task_exits_total{status}`,
/// `tfcluster_tasks_up`. Clones count into the same metrics; the default counts into metrics
/// no registry holds.
#[derive(Clone, Debug, Default)]
pub struct TaskMetrics {
    starts: Counter,
    exits: Family<ExitLabels, Counter>,
    up: Gauge,
}

impl TaskMetrics {
    /// Registers the task families into `registry` (once: a second registration of the
    /// same names would show them twice).
    pub fn register(&self, registry: &mut Registry) {
        let metrics = self;
        // The encoder adds `_total` to a counter's name.
        registry.register(
            "tfcluster_task_starts",
            "Local tasks started",
            metrics.starts.clone(),
        );
        registry.register(
            "tfcluster_task_exits",
            "Local tasks that exited, by how (ok, failed, signalled, hung, stopped)",
            metrics.exits.clone(),
        );
        registry.register(
            "tfcluster_tasks_up",
            "Local tasks running now",
            metrics.up.clone(),
        );
    }

    pub(crate) fn started(&self) {
        self.starts.inc();
        self.up.inc();
    }

    pub(crate) fn exited(&self, status: ExitKind) {
        self.exits.get_or_create(&ExitLabels { status }).inc();
        self.up.dec();
    }
}
