//! [`TaskMetrics`]: what a [`Supervisor`](crate::supervise::Supervisor) counts of its tasks,
//! for `run --local` and the elastic agent alike.

use std::fmt::Write as _;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::Restart;

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

/// Why tasks were restarted, as `tfcluster_restarts_total` labels it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum RestartCause {
    /// A task failed.
    task_failed,
    /// The watchdog found a task hung.
    hung,
    /// A task exited as planned, after saving on a preemption notice (42, 143).
    planned,
    /// A host (its agent) was lost.
    host_lost,
    /// A host joined.
    joined,
    /// A host left.
    left,
    /// A host left ahead of its cloud's notice (a spot preemption, maintenance).
    departed,
}

impl RestartCause {
    /// The cause of a restart after a task ended with `end`.
    pub fn of(end: &crate::TaskEnd) -> Self {
        match end {
            crate::TaskEnd::Hung { .. } => Self::hung,
            end if end.is_planned() => Self::planned,
            _ => Self::task_failed,
        }
    }
}

/// What a restart took with it, as `tfcluster_restarts_total`'s `scope` label reads it
/// ([`Restart::as_str`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct ScopeLabel(Restart);

impl EncodeLabelValue for ScopeLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.0.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestartLabels {
    scope: ScopeLabel,
    cause: RestartCause,
}

/// The task families: `tfcluster_task_starts_total`, `tfcluster_task_exits_total{status}`,
/// `tfcluster_tasks_up`, `tfcluster_restarts_total{scope,cause}`. Clones count into the same metrics; the default counts into metrics
/// no registry holds.
#[derive(Clone, Debug, Default)]
pub struct TaskMetrics {
    starts: Counter,
    exits: Family<ExitLabels, Counter>,
    up: Gauge,
    restarts: Family<RestartLabels, Counter>,
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
        registry.register(
            "tfcluster_restarts",
            "Restarts, by what they took with them (scope: task, task+chief, round) and why",
            metrics.restarts.clone(),
        );
    }

    /// Tasks were restarted: `scope` says which (a round: every task), `cause` why.
    pub fn restarted(&self, scope: Restart, cause: RestartCause) {
        let labels = RestartLabels {
            scope: ScopeLabel(scope),
            cause,
        };
        self.restarts.get_or_create(&labels).inc();
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
