//! [`AgentMetrics`]: what an elastic agent counts (`--metrics` on `run --rdzv`): its rounds,
//! their ends by cause (`tfcluster_restarts_total{scope="round"}`, beside its in-place
//! restarts), the round forming, its heartbeats, the cloud's notices for its host, and its
//! tasks ([`TaskMetrics`]).
//!
//! No label has unbounded values: causes and statuses are closed enums, never an address,
//! node id, error string or token.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cloud_notices::{Cloud, Notice, NoticeKind};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::EndReason;
use failure_policy::Restart;
use launcher::{RestartCause, TaskMetrics};

/// The agent's metrics; clones count into the same ones. Register them with
/// [`AgentMetrics::register`] and give them to [`AgentOptions::with_metrics`](crate::AgentOptions::with_metrics).
#[derive(Clone, Debug)]
pub struct AgentMetrics {
    tasks: TaskMetrics,
    rounds: Counter,
    round: Gauge,
    members: Gauge,
    formation: Histogram,
    heartbeat: Histogram,
    heartbeat_failures: Counter,
    notices: Family<NoticeLabels, Counter>,
    joined: Arc<AtomicBool>,
}

/// `tfcluster_preemption_notices_total`'s labels: closed sets, the clouds' and kinds' words.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NoticeLabels {
    cloud: CloudLabel,
    kind: KindLabel,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct CloudLabel(Cloud);

impl EncodeLabelValue for CloudLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.0.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct KindLabel(NoticeKind);

impl EncodeLabelValue for KindLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.0.as_str())
    }
}

impl Default for AgentMetrics {
    fn default() -> Self {
        Self {
            tasks: TaskMetrics::default(),
            rounds: Counter::default(),
            round: Gauge::default(),
            members: Gauge::default(),
            // 10 ms to about 20 min: a round forms in a last call (3 s) or a join timeout.
            formation: Histogram::new(exponential_buckets(0.01, 4.0, 10)),
            // 1 ms to about 4 min: a beat is held by the server up to its interval.
            heartbeat: Histogram::new(exponential_buckets(0.001, 4.0, 10)),
            heartbeat_failures: Counter::default(),
            notices: Family::default(),
            joined: Arc::default(),
        }
    }
}

impl AgentMetrics {
    /// Registers the agent's metrics and its tasks' ([`TaskMetrics::register`]) into
    /// `registry` (once).
    pub fn register(&self, registry: &mut Registry) {
        let metrics = self;
        metrics.tasks.register(registry);
        // The encoder adds `_total` to counters and the unit's `_seconds`.
        registry.register(
            "tfcluster_rounds",
            "Rounds this agent took part in",
            metrics.rounds.clone(),
        );
        registry.register(
            "tfcluster_round",
            "The number of the round this agent is in (0: none yet)",
            metrics.round.clone(),
        );
        registry.register(
            "tfcluster_round_members",
            "Nodes in this agent's current round",
            metrics.members.clone(),
        );
        registry.register_with_unit(
            "tfcluster_round_formation",
            "From joining (or joining again) to the round's forming",
            Unit::Seconds,
            metrics.formation.clone(),
        );
        registry.register_with_unit(
            "tfcluster_heartbeat",
            "Heartbeat round trips (held by the rendezvous while the round runs)",
            Unit::Seconds,
            metrics.heartbeat.clone(),
        );
        registry.register(
            "tfcluster_heartbeat_failures",
            "Heartbeat attempts that failed (each is retried until the heartbeat timeout)",
            metrics.heartbeat_failures.clone(),
        );
        registry.register(
            "tfcluster_preemption_notices",
            "Notices from the cloud that this host will be preempted, stopped or rebooted",
            metrics.notices.clone(),
        );
    }

    /// Whether the agent is in the job: joined, waiting for or running a round. False before
    /// it joins and once it left or gave up: what `--metrics`'s `/healthz` answers.
    pub fn is_joined(&self) -> bool {
        self.joined.load(Ordering::Relaxed)
    }

    pub(crate) fn set_joined(&self, joined: bool) {
        self.joined.store(joined, Ordering::Relaxed);
    }

    pub(crate) fn tasks(&self) -> &TaskMetrics {
        &self.tasks
    }

    pub(crate) fn round_formed(&self, number: u64, members: usize, waited: Duration) {
        self.rounds.inc();
        self.round.set(i64::try_from(number).unwrap_or(i64::MAX));
        self.members.set(i64::try_from(members).unwrap_or(i64::MAX));
        self.formation.observe(waited.as_secs_f64());
    }

    /// A round ended for `reason`; a job's success is no restart.
    pub(crate) fn round_ended(&self, reason: EndReason) {
        let cause = match reason {
            EndReason::TaskFailed => RestartCause::task_failed,
            EndReason::TaskHung => RestartCause::hung,
            EndReason::TaskPlanned => RestartCause::planned,
            EndReason::NodeLost => RestartCause::host_lost,
            EndReason::NodeJoined => RestartCause::joined,
            EndReason::NodeLeft => RestartCause::left,
            EndReason::NodeDeparted => RestartCause::departed,
            EndReason::JobSucceeded => return,
        };
        self.tasks.restarted(Restart::Round, cause);
    }

    /// A new notice from the cloud.
    pub(crate) fn notice(&self, notice: &Notice) {
        let labels = NoticeLabels {
            cloud: CloudLabel(notice.cloud),
            kind: KindLabel(notice.kind),
        };
        self.notices.get_or_create(&labels).inc();
    }

    pub(crate) fn heartbeat(&self, round_trip: Duration, failed_attempts: u32) {
        self.heartbeat.observe(round_trip.as_secs_f64());
        self.heartbeat_failures.inc_by(u64::from(failed_attempts));
    }
}
