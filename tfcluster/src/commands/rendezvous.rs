//! `tfcluster rendezvous serve`: an elastic job's rendezvous on its own, for when no agent
//! should serve it, with a token of its own or none; `tfcluster rendezvous token`: a fresh
//! token to give it and the job's hosts.

use std::net::SocketAddr;
use std::time::Duration;

use elastic::{RendezvousServer, ServerOptions, Token};

use crate::args::rendezvous::token::{token, warn_open};

use crate::failure::Failure;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// Serve the rendezvous of elastic jobs (`run --rdzv`) until SIGINT or SIGTERM.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  export TFCLUSTER_RDZV_TOKEN=$(tfcluster rendezvous token)\n  \
tfcluster rendezvous serve --listen 0.0.0.0:29400\n  \
then on each host, with the same TFCLUSTER_RDZV_TOKEN:\n  \
tfcluster run --rdzv HOST:29400 --nodes 2:4 -- python train.py"
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
        /// A file holding the rendezvous's own token (16 to 1024 printable ASCII characters;
        /// one trailing newline is dropped), or TFCLUSTER_RDZV_TOKEN (not both): every call,
        /// on any job, must carry it, and every job served gets it as its token. Without it,
        /// each job's first host sets the job's token (run's --rdzv-token-file), or leaves the
        /// job open; serving says so in a warning.
        #[arg(long, value_name = "PATH")]
        token_file: Option<std::path::PathBuf>,
    },
    /// Print a fresh random token (256 bits, hex) for `--rdzv-token-file` or
    /// `TFCLUSTER_RDZV_TOKEN`, e.g. `export TFCLUSTER_RDZV_TOKEN=$(tfcluster rendezvous token)`.
    Token,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let (listen, rdzv_timeout, rdzv_last_call, token_file) = match args.action {
        Action::Serve {
            listen,
            rdzv_timeout,
            rdzv_last_call,
            token_file,
        } => (listen, rdzv_timeout, rdzv_last_call, token_file),
        Action::Token => {
            let token = Token::generate();
            return crate::output::emit(&format!("{}\n", token.expose_secret()));
        }
    };
    let token = token(token_file.as_deref(), "--token-file")?;
    runtime()?.block_on(async move {
        let stop = Stop::install();
        let mut options = ServerOptions::default()
            .with_timeout(rdzv_timeout)
            .with_last_call(rdzv_last_call);
        match token {
            Some(token) => options = options.with_token(token),
            None => warn_open(&listen.to_string(), None, "--token-file"),
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
