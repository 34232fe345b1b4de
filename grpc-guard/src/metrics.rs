//! [`GuardMetrics`]: what a guarded server counts for Prometheus: the connections it holds
//! open, and what it refused by the limit that refused it. One mechanism for every server of
//! the workspace (the TaskServer's `tfcluster_taskserver_*`, the rendezvous's
//! `tfcluster_rendezvous_*`).
//!
//! No label has unbounded values: `limit` is a fixed name given in the code (this crate's
//! `not_allowed`, `max_connections`, `handshake_timeout`, `accept_failed`, `request_memory`,
//! `response_memory`, and the service's own, e.g. `max_contexts`); never an address.

use std::fmt;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::connection::OpenConnections;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    limit: &'static str,
}

/// A gauge read from the server's count of open connections at each scrape (0 before it
/// serves).
#[derive(Clone, Debug, Default)]
struct Connections(Arc<Mutex<Option<OpenConnections>>>);

impl EncodeMetric for Connections {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), fmt::Error> {
        let count = match self.0.lock() {
            Ok(held) => held.as_ref().map_or(0, OpenConnections::count),
            Err(_) => 0,
        };
        encoder.encode_gauge(&i64::try_from(count).unwrap_or(i64::MAX))
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// A guarded server's metrics: `PREFIX_connections` (gauge: connections held open, admitted
/// or waiting for their first bytes) and `PREFIX_refusals_total{limit}` (counter: connections
/// and calls refused, by the limit that refused them). Register them with
/// [`register`](Self::register) and give them to [`Guard::with_metrics`](crate::Guard::with_metrics);
/// clones count into the same ones. The default counts into metrics no registry holds.
#[derive(Clone, Debug, Default)]
pub struct GuardMetrics {
    connections: Connections,
    refusals: Family<RefusalLabels, Counter>,
}

impl GuardMetrics {
    /// Registers the metrics into `registry` (once) as `{prefix}_connections` and
    /// `{prefix}_refusals_total`, their help naming `server` (e.g. "TaskServer").
    pub fn register(&self, registry: &mut Registry, prefix: &str, server: &str) {
        registry.register(
            format!("{prefix}_connections"),
            format!("Connections the {server} holds open"),
            self.connections.clone(),
        );
        // The encoder adds `_total` to a counter's name.
        registry.register(
            format!("{prefix}_refusals"),
            format!("Connections and calls the {server} refused, by the limit that refused them"),
            self.refusals.clone(),
        );
    }

    /// Counts one refusal by `limit`: a limit of this crate's, or one of the service's own
    /// (`max_contexts`). Give a fixed name, never a value from a request.
    pub fn refused(&self, limit: &'static str) {
        self.refusals.get_or_create(&RefusalLabels { limit }).inc();
    }

    /// The refusals counted under `limit` so far.
    pub fn refusals(&self, limit: &'static str) -> u64 {
        self.refusals.get_or_create(&RefusalLabels { limit }).get()
    }

    /// Reads the open connections of a server that started serving.
    pub(crate) fn serving(&self, connections: OpenConnections) {
        if let Ok(mut held) = self.connections.0.lock() {
            *held = Some(connections);
        }
    }
}
