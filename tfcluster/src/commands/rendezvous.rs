//! `tfcluster rendezvous serve`: an elastic job's rendezvous on its own, for when no agent
//! should serve it.

use std::net::SocketAddr;
use std::time::Duration;

use elastic::{RendezvousServer, ServerOptions};

use crate::failure::Failure;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Serve the rendezvous of elastic jobs (`run --rdzv`) until SIGINT or SIGTERM.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  tfcluster rendezvous serve --listen 0.0.0.0:29400\n  \
then on each host: tfcluster run --rdzv HOST:29400 --nodes 2:4 -- python train.py"
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
    },
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let Action::Serve {
        listen,
        rdzv_timeout,
        rdzv_last_call,
    } = args.action;
    runtime()?.block_on(async move {
        let stop = Stop::install();
        let options = ServerOptions::default()
            .with_timeout(rdzv_timeout)
            .with_last_call(rdzv_last_call);
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
