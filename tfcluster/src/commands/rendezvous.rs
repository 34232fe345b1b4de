//! `tfcluster rendezvous serve`: an elastic job's rendezvous on its own, for when no agent
//! should serve it.

use std::net::SocketAddr;
use std::time::Duration;

use elastic::{RendezvousServer, ServerOptions};
use remote_connect::Network;

use crate::args::tls::TlsArgs;
use crate::failure::Failure;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Serve the rendezvous of elastic jobs (`run --rdzv`) until SIGINT or SIGTERM.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tfcluster rendezvous serve --listen 0.0.0.0:29400\n  \
then on each host: tfcluster run --rdzv HOST:29400 --nodes 2:4 -- python train.py\n  \
tfcluster rendezvous serve --allow 10.0.0.0/8 --tls-cert rdzv.pem --tls-key rdzv-key.pem \
--tls-ca ca.pem\n  \
then on each host: tfcluster run --rdzv HOST:29400 --rdzv-tls-ca ca.pem --rdzv-tls-cert me.pem \
--rdzv-tls-key me-key.pem --nodes 2 -- python train.py"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Serve it on ADDR; prints `serving the rendezvous on ADDR` once it listens.
    Serve {
        /// Where to listen, `IP:PORT` (port 0: any free one).
        #[arg(long, default_value = "0.0.0.0:29400")]
        listen: SocketAddr,
        /// How long a host may be silent before it is lost.
        #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
        rdzv_timeout: Duration,
        /// How long a round with at least MIN hosts waits for more.
        #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
        rdzv_last_call: Duration,
        /// Accept connections only from these agents' addresses or networks, comma-separated
        /// (`127.0.0.1`, `192.0.2.0/24`, `::1`, `2001:db8::/32`); others are closed at once,
        /// told why. Default: every host.
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        allow: Option<Vec<Network>>,
        // mTLS: agents then need `run --rdzv-tls-ca/--rdzv-tls-cert/--rdzv-tls-key` with a
        // certificate of this CA, and this server's certificate must name the host they dial.
        #[command(flatten)]
        tls: TlsArgs,
    },
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let Action::Serve {
        listen,
        rdzv_timeout,
        rdzv_last_call,
        allow,
        tls,
    } = args.action;
    let tls = tls.config()?;
    runtime()?.block_on(async move {
        let stop = Stop::install();
        let mut options = ServerOptions::default()
            .with_timeout(rdzv_timeout)
            .with_last_call(rdzv_last_call);
        if let Some(networks) = allow {
            options = options.with_allow(networks);
        }
        if let Some(tls) = tls {
            options = options.with_tls(tls);
        }
        let server = RendezvousServer::start(listen, options).await?;
        crate::output::emit(&format!(
            "serving the rendezvous on {}\n",
            server.local_addr()
        ))?;
        stop.wait().await;
        server.shutdown().await;
        Ok(())
    })
}
