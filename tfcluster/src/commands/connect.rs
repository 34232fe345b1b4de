//! `tfcluster connect`: connect to a running cluster as TensorFlow's client would, and show
//! every task's devices and what each may see.

mod follow;
mod probe;

use std::time::Duration;

use anyhow::{Context as _, anyhow};
use cluster_resolver::watch::WatchOptions;
use device_filter::ClusterDeviceFilters;
use indicatif::{ProgressBar, ProgressStyle};
use remote_connect::{ConnectOptions, Context, Stage};

use crate::args::source::ClusterArgs;
use crate::args::tls::TlsArgs;
use crate::failure::Failure;
use crate::input::read_json_or_file;
use crate::output::emit;
use crate::report::{self, Format};
use crate::runtime::runtime;

/// Connect to a running cluster (TensorFlow's `experimental_connect_to_cluster`) and print
/// every task's devices, and with filters what each task may see; with --probe, also run an
/// op on every task and check each one's view on the workers themselves.
///
/// With --follow, stays connected and prints each change of the cluster as it is applied.
///
/// Finishes within --timeout even when tasks are down or silent: every task that failed is
/// listed with its address and cause, and the exit status is 1. On a terminal, a progress bar
/// shows discovery and context creation for clusters of more than 8 tasks.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
tfcluster connect --cluster '{\"worker\": [\"localhost:2222\", \"localhost:2223\"], \"ps\": [\"localhost:2224\"]}' --filters ps\n  \
tfcluster connect --from tf-config --timeout 2s --format json\n  \
tfcluster connect --cluster cluster.json --filters ps --probe\n  \
tfcluster connect --cluster cluster.json --follow --format json\n  \
tfcluster connect --from rendezvous --rdzv node0:29400 --rdzv-id job1 --follow\n  \
tfcluster connect --from rendezvous --rdzv etcd://node0:2379,node1:2379 --rdzv-id job1 --follow\n  \
tfcluster connect --cluster cluster.json --tls-cert client.crt --tls-key client.key --tls-ca ca.crt")]
pub(crate) struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Device filters: `ps` for ParameterServerStrategy's, or JSON such as
    /// `{"worker": {"0": ["/job:ps"]}}` inline or in a file.
    #[arg(long)]
    filters: Option<String>,
    /// Give up on a task after this long (e.g. 500ms, 5s).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Keep following the cluster after the report: each change (tasks added, removed,
    /// replaced) is applied in place as TensorFlow's update_server_def does, and printed as
    /// one line (with --format json, one object per line with keys added, removed, replaced,
    /// reset, devices) until Ctrl-C, which closes every remote context (exit status 130). A
    /// cluster file (--cluster PATH, --from file) is watched for changes, Kubernetes pods
    /// through the API's watch, an elastic job (--from rendezvous) through its rendezvous,
    /// which answers each new round at once (a long poll); other sources are read again
    /// every --interval.
    #[arg(long, conflicts_with = "probe")]
    follow: bool,
    /// With --follow: how often sources that cannot announce changes (TF_CONFIG, Slurm, inline
    /// JSON, ...) are read again.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration, requires = "follow")]
    interval: Duration,
    /// Also run one tiny op on every task (a tfcluster task server, which runs no ops, is
    /// reported as such); with --filters, also check each task's view by real cross-task
    /// inputs and compare it with what the filters predict (any difference: exit status 1).
    #[arg(long)]
    probe: bool,
    #[command(flatten)]
    tls: TlsArgs,
    /// Output form.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    runtime()?.block_on(connect(args))
}

async fn connect(args: Args) -> Result<(), Failure> {
    let (_, spec) = args.cluster.resolve().await?;
    let mut options = ConnectOptions::default()
        .with_timeout(args.timeout)
        .with_rpc_timeout(args.timeout)
        .with_make_master_device_default(false);
    if let Some(filters) = &args.filters {
        let filters = if filters == "ps" {
            ClusterDeviceFilters::parameter_server(&spec)
        } else {
            let (text, origin) = read_json_or_file(filters)?;
            serde_json::from_str(&text).with_context(|| format!("device filters from {origin}"))?
        };
        options = options.with_cluster_device_filters(filters);
    }
    if let Some(tls) = args.tls.config()? {
        options = options.with_tls(tls);
    }
    if args.follow {
        let watch = WatchOptions::default().with_interval(args.interval);
        let changes = args.cluster.watch(watch).await?;
        return follow::run(changes, options, args.format).await;
    }
    let ctx = Context::new();
    let tasks = spec.total_tasks();
    tracing::info!(tasks, timeout = ?args.timeout, "connecting");
    // A progress bar on a terminal for larger clusters (indicatif draws nothing when stderr is
    // not a terminal, so pipes and logs stay clean): discovery, then context creation.
    let bar = (tasks > 8).then(|| {
        let bar = ProgressBar::new(2 * tasks as u64);
        if let Ok(style) = ProgressStyle::with_template("{msg:>20} [{bar:30}] {pos}/{len}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    });
    if let Some(bar) = bar.clone() {
        options = options.with_progress(move |stage, done, _| {
            let (message, base) = match stage {
                Stage::Discovery => ("discovering devices", 0),
                _ => ("creating contexts", tasks),
            };
            bar.set_message(message);
            bar.set_position((base + done) as u64);
        });
    }
    let connected = ctx.connect_to_cluster(spec, options).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    connected?;
    let probe = if args.probe {
        Some(probe::run(&ctx, args.filters.is_some()).await)
    } else {
        None
    };
    let out = match (args.format, &probe) {
        (Format::Json, Some(probe)) => {
            let mut value = report::json(&ctx);
            value["probe"] = probe.to_json();
            format!("{value}\n")
        }
        (Format::Table, Some(probe)) => report::render(&ctx, args.format) + &probe.table(),
        (format, None) => report::render(&ctx, format),
    };
    // The remote contexts are closed even if printing fails.
    let closed = ctx.close().await;
    emit(&out)?;
    closed?;
    match probe.map(|p| p.differences()) {
        Some(differences) if !differences.is_empty() => Err(anyhow!(
            "the views observed differ from the device filters:\n  {}",
            differences.join("\n  ")
        )
        .into()),
        _ => Ok(()),
    }
}
