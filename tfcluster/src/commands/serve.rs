//! `tfcluster serve`: one task of a cluster, served until SIGINT or SIGTERM.

use std::net::SocketAddr;

use anyhow::anyhow;
use metrics_endpoint::Health;
use metrics_endpoint::prometheus_client::registry::Registry;
use remote_connect::{TaskServer, TaskServerMetrics};

use crate::args::allow::{AllowArgs, access};
use crate::args::limits::LimitArgs;
use crate::args::metrics::MetricsArgs;
use crate::args::source::ClusterArgs;
use crate::args::tls::TlsArgs;
use crate::failure::Failure;
use crate::output::emit;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Serve one task of a cluster: TensorFlow's device discovery and remote contexts, so real
/// TensorFlow (`tf.config.experimental_connect_to_cluster`) and `tfcluster connect` can
/// connect to it.
///
/// Prints `serving /job:J/replica:0/task:T at ADDRESS` once it accepts connections; SIGINT
/// (Ctrl-C) and SIGTERM stop it gracefully.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
tfcluster serve --cluster '{\"worker\": [\"localhost:2222\", \"localhost:2223\"]}' --job worker --task 1\n  \
TF_CONFIG=... tfcluster serve --from tf-config\n  \
tfcluster serve --cluster cluster.json --job worker --task 0 --allow 10.0.0.0/8,::1 \\\n    \
--tls-cert worker0.crt --tls-key worker0.key --tls-ca ca.crt\n  \
tfcluster serve --from tf-config --max-connections 2000 --idle-timeout 1h --context-idle-limit 24h\n  \
tfcluster serve --from tf-config --metrics 0.0.0.0:9401   # Prometheus scrapes HOST:9401/metrics; \
/healthz 200 while serving, 503 once stopping")]
pub(crate) struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The job of the task to serve (default: the resolver's task type).
    #[arg(long)]
    job: Option<String>,
    /// The index of the task to serve (default: the resolver's task id).
    #[arg(long)]
    task: Option<u32>,
    /// Listen here (default: all interfaces, the port of this task's address).
    #[arg(long)]
    bind: Option<SocketAddr>,
    #[command(flatten)]
    allow: AllowArgs,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    limits: LimitArgs,
    // Healthy (/healthz 200) while the TaskServer serves; 503 once it is stopping.
    #[command(flatten)]
    metrics: MetricsArgs,
    /// How to announce that it serves: `serving /job:J/replica:0/task:T at ADDRESS (devices)`,
    /// or one JSON object {"task", "address", "devices"}.
    #[arg(long, value_enum, default_value = "table")]
    format: Announce,
}

/// The form of `serve`'s one line.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Announce {
    Table,
    Json,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    runtime()?.block_on(serve(args))
}

async fn serve(args: Args) -> Result<(), Failure> {
    let (resolver, spec) = args.cluster.resolve().await?;
    let job = args.job.or_else(|| resolver.task_type()).ok_or_else(|| {
        anyhow!("which task to serve? give --job (the cluster source names none)")
    })?;
    let task = args.task.or_else(|| resolver.task_id()).ok_or_else(|| {
        anyhow!("which task to serve? give --task (the cluster source names none)")
    })?;
    // The metrics port first: one that cannot be bound fails before anything serves. Not
    // healthy until the TaskServer serves.
    let metrics = TaskServerMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let health = Health::new();
    health.set(false);
    let _serving_metrics = args.metrics.serve(registry, health.clone()).await?;
    let mut builder = TaskServer::builder(spec, &job, task)
        .with_limits(args.limits.limits())
        .with_metrics(metrics);
    if let Some(bind) = args.bind {
        builder = builder.with_bind(bind);
    }
    builder = builder.with_access(access(args.allow.allow.as_deref(), args.tls.config()?));
    let stop = Stop::install();
    let server = builder.start().await?;
    health.set(true);
    let name = format!("/job:{job}/replica:0/task:{task}");
    let line = match args.format {
        Announce::Table => format!(
            "serving {name} at {} ({})\n",
            server.local_addr(),
            server.devices().join(", ")
        ),
        Announce::Json => format!(
            "{}\n",
            serde_json::json!({
                "task": name,
                "address": server.local_addr().to_string(),
                "devices": server.devices(),
            })
        ),
    };
    emit(&line)?;
    stop.wait().await;
    health.set(false);
    tracing::info!("stopping: in-flight requests finish first");
    Ok(server.shutdown().await?)
}
