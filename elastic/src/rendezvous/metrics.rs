//! [`RendezvousMetrics`]: what the built-in rendezvous server counts (`--metrics` on
//! `rendezvous serve` and on the agent that serves): requests by method and gRPC code, jobs,
//! rounds formed, hosts set aside, open connections and refusals by limit (those two counted by `grpc-guard`).
//!
//! No label has unbounded values: the method is one of the eight RPCs, the code one of gRPC's
//! seventeen by its name (`OK`, `NOT_FOUND`, ..., as the gRPC layer names it:
//! [`code_label`](crate::grpc::status::code_label)); never a job id, address or error string.

use grpc_guard::GuardMetrics;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The rendezvous's RPCs, as `tfcluster_rendezvous_requests_total` labels them.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
pub(crate) enum Method {
    Join,
    WaitRound,
    WatchRounds,
    Heartbeat,
    Report,
    Leave,
    JobStatus,
    ListJobs,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: Method,
    /// gRPC's name of the answer's code.
    code: &'static str,
}

/// The rendezvous server's metrics; clones count into the same ones. Register them with
/// [`RendezvousMetrics::register`] and give them to
/// [`RendezvousServerBuilder::with_metrics`](crate::RendezvousServerBuilder::with_metrics). The default counts
/// into metrics no registry holds.
#[derive(Clone, Debug)]
pub struct RendezvousMetrics {
    requests: Family<RequestLabels, Counter>,
    jobs: Gauge,
    rounds_formed: Counter,
    hosts_set_aside: Counter,
    joins_deferred: Counter,
    departure_to_round: Histogram,
    guard: GuardMetrics,
}

impl Default for RendezvousMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            jobs: Gauge::default(),
            rounds_formed: Counter::default(),
            hosts_set_aside: Counter::default(),
            joins_deferred: Counter::default(),
            // From a second (warm interpreters, a short last call) to two minutes (a job
            // waiting for a host to replace the one that left).
            departure_to_round: Histogram::new([1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0]),
            guard: GuardMetrics::default(),
        }
    }
}

impl RendezvousMetrics {
    /// Registers the rendezvous's metrics into `registry` (once); a server given them
    /// before counts from its start either way.
    pub fn register(&self, registry: &mut Registry) {
        let metrics = self;
        // The encoder adds `_total` to a counter's name.
        registry.register(
            "tfcluster_rendezvous_requests",
            "Rendezvous calls answered, by method and gRPC code",
            metrics.requests.clone(),
        );
        registry.register(
            "tfcluster_rendezvous_jobs",
            "Jobs the rendezvous holds",
            metrics.jobs.clone(),
        );
        registry.register(
            "tfcluster_rendezvous_rounds_formed",
            "Rounds formed, of every job",
            metrics.rounds_formed.clone(),
        );
        registry.register(
            "tfcluster_rendezvous_hosts_set_aside",
            "Hosts set aside (their tasks failed too often while other hosts' did not), of every job",
            metrics.hosts_set_aside.clone(),
        );
        registry.register(
            "tfcluster_rendezvous_joins_deferred",
            "Joins that found the job's membership budget spent (rounds ended by hosts joining or leaving) and waited instead of ending the running round, of every job",
            metrics.joins_deferred.clone(),
        );
        registry.register(
            "tfcluster_rendezvous_departure_to_round_seconds",
            "Seconds from a node leaving ahead of its cloud's notice (a spot preemption, maintenance) to the job's next round, of every job",
            metrics.departure_to_round.clone(),
        );
        metrics
            .guard
            .register(registry, "tfcluster_rendezvous", "rendezvous server");
    }

    /// Counts a call to `method` answered with the code gRPC names `code`.
    pub(crate) fn answered(&self, method: Method, code: &'static str) {
        self.requests
            .get_or_create(&RequestLabels { method, code })
            .inc();
    }

    pub(crate) fn set_jobs(&self, jobs: usize) {
        self.jobs.set(i64::try_from(jobs).unwrap_or(i64::MAX));
    }

    pub(crate) fn round_formed(&self) {
        self.rounds_formed.inc();
    }

    pub(crate) fn host_set_aside(&self) {
        self.hosts_set_aside.inc();
    }

    pub(crate) fn departure_to_round(&self, after: std::time::Duration) {
        self.departure_to_round.observe(after.as_secs_f64());
    }

    pub(crate) fn join_deferred(&self) {
        self.joins_deferred.inc();
    }

    #[cfg(test)]
    pub(crate) fn joins_deferred(&self) -> u64 {
        self.joins_deferred.get()
    }

    /// What `grpc-guard` counts for this server.
    pub(crate) fn guard(&self) -> &GuardMetrics {
        &self.guard
    }
}
