//! `--allow`: the networks a server takes connections from, declared once for the servers
//! the CLI runs (`serve`'s TaskServer and `rendezvous serve`). `run --rdzv`'s agent takes
//! the same list as `--rdzv-allow` ([`crate::args::elastic`]), for the rendezvous it serves.
//! [`access`] makes each server's [`Access`] from its list and its TLS.

use remote_connect::{Access, Network, TlsConfig};

/// A server's allow list.
#[derive(clap::Args, Debug)]
pub(crate) struct AllowArgs {
    /// Accept connections only from these addresses or networks, comma-separated
    /// (`127.0.0.1`, `192.0.2.0/24`, `::1`, `2001:db8::/32`); others are closed at once,
    /// told why. Default: every host.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) allow: Option<Vec<Network>>,
}

/// Who may connect to a server the CLI runs: the peers in `allow` (every peer when `None`),
/// over mTLS with `tls` (plaintext when `None`).
pub(crate) fn access(allow: Option<&[Network]>, tls: Option<TlsConfig>) -> Access {
    let access = match allow {
        Some(networks) => Access::default().with_allow(networks.iter().copied()),
        None => Access::default(),
    };
    match tls {
        Some(tls) => access.with_tls(tls),
        None => access,
    }
}
