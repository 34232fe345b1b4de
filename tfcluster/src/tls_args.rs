//! `--tls-cert`, `--tls-key`, `--tls-ca`: TLS with client certificates, the same three flags
//! for `serve` and `connect`.

use std::path::PathBuf;

use remote_connect::TlsConfig;

use crate::args::Failure;

/// TLS with client certificates (mTLS) between tfcluster peers; all three or none. TensorFlow
/// speaks plaintext only: a task served with TLS is reachable only by `tfcluster connect` (or
/// a `remote-connect` program) given TLS flags too.
#[derive(clap::Args)]
pub(crate) struct TlsArgs {
    /// This peer's certificate chain, PEM (a server's must name the host clients dial, as a DNS
    /// name or IP address). Turns on TLS, which TensorFlow does not speak; needs --tls-key and
    /// --tls-ca.
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, PEM.
    #[arg(long, value_name = "FILE", requires_all = ["tls_cert", "tls_ca"])]
    tls_key: Option<PathBuf>,
    /// The CA certificates, PEM, that every peer's certificate must chain to: clients without
    /// such a certificate are refused, and so are servers.
    #[arg(long, value_name = "FILE", requires_all = ["tls_cert", "tls_key"])]
    tls_ca: Option<PathBuf>,
}

impl TlsArgs {
    /// The config the flags name, read and checked; `None` without them (plaintext).
    pub(crate) fn config(&self) -> Result<Option<TlsConfig>, Failure> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Ok(Some(TlsConfig::from_files(cert, key, ca)?)),
            // clap's `requires_all` lets only all or none through.
            _ => Ok(None),
        }
    }
}
