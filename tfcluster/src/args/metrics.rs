//! `--metrics ADDR`: Prometheus metrics and a health check of a long-running command (`run
//! --rdzv`, `run --local`, `rendezvous serve`, `serve`) on an HTTP port of its own
//! ([`metrics_endpoint`]).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use metrics_endpoint::prometheus_client::registry::Registry;
use metrics_endpoint::{Health, MetricsEndpoint, Serving};

use crate::failure::Failure;

/// The metrics flag.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct MetricsArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (OpenMetrics text) and a health check
    /// at /healthz (200 while this command does its job, else 503), e.g. `0.0.0.0:9400`;
    /// port 0 picks a free one. Prints `serving metrics on ADDR` on stderr once it listens.
    /// The port is bounded (32 connections, 5 s to send a request, no body, 10 s per
    /// answer) and exposes no address or token.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<SocketAddr>,
}

impl MetricsArgs {
    /// Serves `registry` and `health` when `--metrics` was given; the endpoint serves until
    /// the returned [`Serving`] is dropped.
    pub(crate) async fn serve(
        &self,
        registry: Registry,
        health: Health,
    ) -> Result<Option<Serving>, Failure> {
        let Some(addr) = self.metrics else {
            return Ok(None);
        };
        let serving = MetricsEndpoint::builder(Arc::new(registry), health)
            .with_bind(addr)
            .start()
            .await
            .with_context(|| format!("--metrics {addr}"))?;
        // The address it got (port 0 picks one), which scrape configs and tests need.
        eprintln!("serving metrics on {}", serving.local_addr());
        Ok(Some(serving))
    }
}
