//! `tfcluster up`: a whole cluster in this process, connected to as ParameterServerStrategy
//! connects, to show what TensorFlow's connect does.

use std::fmt::Write as _;

use cluster_resolver::tf_config_for;
use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;
use remote_connect::{ConnectOptions, Context, RunningServer, TaskServer};

use crate::failure::Failure;
use crate::output::emit;
use crate::report::{self, Format};
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Start a local cluster in this process (a chief, workers and parameter servers, each a task
/// server on a free 127.0.0.1 port), connect to it with ParameterServerStrategy's device
/// filters, and print each task's address and the devices it may see.
///
/// With --keep it keeps serving until Ctrl-C and prints each task's TF_CONFIG and the Python
/// lines that connect real TensorFlow to it.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tfcluster up\n  tfcluster up --workers 4 --ps 2 --no-filters\n  tfcluster up --keep"
)]
pub(crate) struct Args {
    /// Number of workers.
    #[arg(long, default_value_t = 2)]
    workers: u32,
    /// Number of parameter servers.
    #[arg(long, default_value_t = 1)]
    ps: u32,
    /// Connect without device filters (every task sees every device).
    #[arg(long)]
    no_filters: bool,
    /// Keep serving until Ctrl-C, and print how to connect real TensorFlow.
    #[arg(long)]
    keep: bool,
    /// Output form.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    runtime()?.block_on(up(args))
}

async fn up(args: Args) -> Result<(), Failure> {
    let mut servers: Vec<RunningServer> = Vec::new();
    let mut builder = ClusterSpec::builder();
    for (job, count) in [("chief", 1), ("worker", args.workers), ("ps", args.ps)] {
        let mut addresses = Vec::new();
        for _ in 0..count {
            // Each server binds port 0 first; the cluster names the port it got.
            let placeholder = ClusterSpec::builder().job(job, ["localhost:0"]).build()?;
            let server = TaskServer::builder(placeholder, job, 0)
                .with_bind("127.0.0.1:0".parse().expect("a valid address"))
                .start()
                .await?;
            addresses.push(server.local_addr().to_string());
            servers.push(server);
        }
        if count > 0 {
            builder = builder.job(job, addresses);
        }
    }
    let spec = builder.build()?;
    let mut options = ConnectOptions::default();
    if !args.no_filters {
        options =
            options.with_cluster_device_filters(ClusterDeviceFilters::parameter_server(&spec));
    }
    let ctx = Context::new();
    ctx.connect_to_cluster(spec.clone(), options).await?;
    let mut out = report::render(&ctx, args.format);
    if args.keep {
        let how = how_to_connect(&spec)?;
        match args.format {
            Format::Table => out.push_str(&how),
            // Standard output stays one JSON document; the hints go to the terminal.
            Format::Json => eprint!("{how}"),
        }
    }
    let stop = args.keep.then(Stop::install);
    emit(&out)?;
    if let Some(stop) = stop {
        stop.wait().await;
    }
    ctx.close().await?;
    for server in servers {
        server.shutdown().await?;
    }
    Ok(())
}

/// Each task's TF_CONFIG and the Python lines that connect TensorFlow to the cluster.
fn how_to_connect(spec: &ClusterSpec) -> Result<String, Failure> {
    let mut out = String::from("\nTF_CONFIG of each task:\n");
    for job in spec.jobs() {
        for (task, _) in spec.tasks(job)? {
            let tf_config = tf_config_for(spec, job, task, None)?;
            let _ = writeln!(out, "  {job}:{task}  TF_CONFIG='{tf_config}'");
        }
    }
    let _ = write!(
        out,
        "\nConnect TensorFlow to it (serving until Ctrl-C):\n  \
         import tensorflow as tf\n  \
         tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec({}))\n  \
         print(tf.config.list_logical_devices())\n",
        spec.to_json()
    );
    Ok(out)
}
