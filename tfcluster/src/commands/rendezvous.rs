//! `tfcluster rendezvous serve`: an elastic job's rendezvous on its own, for when no agent
//! should serve it; `tfcluster rendezvous token`: a fresh token for a job or a server.

use std::net::SocketAddr;
use std::path::PathBuf;

use elastic::prometheus_client::registry::Registry;
use elastic::{RendezvousMetrics, RendezvousServer, Token};
use metrics_endpoint::Health;

use crate::args::allow::{AllowArgs, access};
use crate::args::metrics::MetricsArgs;
use crate::args::rendezvous::timing::RdzvTimingArgs;
use crate::args::rendezvous::token::{token, warn_open};
use crate::args::tls::TlsArgs;
use crate::failure::Failure;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Serve the rendezvous of elastic jobs (`run --rdzv`) until SIGINT or SIGTERM.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  export TFCLUSTER_RDZV_TOKEN=$(tfcluster rendezvous token)\n  \
tfcluster rendezvous serve --listen 0.0.0.0:29400\n  \
tfcluster rendezvous serve --metrics 0.0.0.0:9400   # Prometheus scrapes HOST:9400/metrics\n  \
then on each host, with the same TFCLUSTER_RDZV_TOKEN:\n  \
tfcluster run --rdzv HOST:29400 --nodes 2:4 -- python train.py\n\n  \
tfcluster rendezvous serve --token-file rdzv.token --allow 10.0.0.0/8 --tls-cert rdzv.pem \
--tls-key rdzv-key.pem --tls-ca ca.pem\n  \
then on each host: tfcluster run --rdzv HOST:29400 --rdzv-token-file rdzv.token \
--rdzv-tls-ca ca.pem --rdzv-tls-cert me.pem --rdzv-tls-key me-key.pem --nodes 2 -- python train.py"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Serve it on ADDR; prints `serving the rendezvous on ADDR` once it listens, then a log
    /// line per round formed or ended and per host gone.
    Serve(Box<ServeArgs>),
    /// Print a fresh random token (256 bits, hex) for `--rdzv-token-file` or
    /// `TFCLUSTER_RDZV_TOKEN`, e.g. `export TFCLUSTER_RDZV_TOKEN=$(tfcluster rendezvous token)`.
    Token,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Where to listen, `IP:PORT` (port 0: any free one).
    #[arg(long, default_value = "0.0.0.0:29400")]
    listen: SocketAddr,
    #[command(flatten)]
    timing: RdzvTimingArgs,
    /// A file holding the rendezvous's own token (16 to 1024 printable ASCII characters;
    /// one trailing newline is dropped), or TFCLUSTER_RDZV_TOKEN (not both): every call,
    /// on any job, must carry it, and every job served gets it as its token. Without it,
    /// each job's first host sets the job's token (run's --rdzv-token-file), or leaves the
    /// job open; serving says so in a warning.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    #[command(flatten)]
    allow: AllowArgs,
    // mTLS: agents then need `run --rdzv-tls-ca/--rdzv-tls-cert/--rdzv-tls-key` with a
    // certificate of this CA, and this server's certificate must name the host they dial.
    #[command(flatten)]
    tls: TlsArgs,
    // Healthy while it serves.
    #[command(flatten)]
    metrics: MetricsArgs,
}

impl Args {
    /// Whether the command serves the rendezvous (and so logs its rounds without `-v`).
    pub(crate) fn serves(&self) -> bool {
        matches!(self.action, Action::Serve(_))
    }
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    match args.action {
        Action::Serve(serve) => run_serve(*serve),
        Action::Token => crate::output::emit(&format!("{}\n", Token::generate().expose_secret())),
    }
}

fn run_serve(args: ServeArgs) -> Result<(), Failure> {
    let tls = args.tls.config()?;
    let token = token(args.token_file.as_deref(), "--token-file")?;
    runtime()?.block_on(async move {
        let stop = Stop::install();
        let mut options = RendezvousServer::builder()
            .with_timeout(args.timing.timeout())
            .with_last_call(args.timing.last_call());
        let open = token.is_none();
        if let Some(token) = token {
            options = options.with_token(token);
        }
        options = options.with_access(access(args.allow.allow.as_deref(), tls));
        // The metrics port first: one that cannot be bound fails before anything serves.
        let metrics = RendezvousMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let health = Health::new();
        let _serving = args.metrics.serve(registry, health.clone()).await?;
        let server = options
            .with_bind(args.listen)
            .with_metrics(metrics)
            .start()
            .await?;
        if open {
            // The address it got (port 0 picks one), which the warning names.
            warn_open(&server.local_addr().to_string(), None, "--token-file");
        }
        crate::output::emit(&format!(
            "serving the rendezvous on {}\n",
            server.local_addr()
        ))?;
        stop.wait().await;
        health.set(false);
        server.shutdown().await;
        Ok(())
    })
}
