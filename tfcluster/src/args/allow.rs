//! `--allow`: the networks a server takes connections from, declared once for the servers
//! the CLI runs (`serve`'s TaskServer and `rendezvous serve`). `run --rdzv`'s agent takes
//! the same list as `--rdzv-allow` ([`crate::args::elastic`]), for the rendezvous it serves.

use remote_connect::Network;

/// A server's allow list.
#[derive(clap::Args, Debug)]
pub(crate) struct AllowArgs {
    /// Accept connections only from these addresses or networks, comma-separated
    /// (`127.0.0.1`, `192.0.2.0/24`, `::1`, `2001:db8::/32`); others are closed at once,
    /// told why. Default: every host.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) allow: Option<Vec<Network>>,
}
