//! The TLS flags: `--tls-cert`, `--tls-key`, `--tls-ca` between tfcluster peers (`serve`,
//! `connect` and `rendezvous serve`), and `--rdzv-tls-ca`, `--rdzv-tls-cert`, `--rdzv-tls-key`
//! to a rendezvous (`run --rdzv` and `--from rendezvous`). Two groups, since their peers
//! differ: mutual TLS needs all three files on both sides, while etcd needs only its CA and a
//! client certificate where it checks clients. With the built-in rendezvous the
//! `--rdzv-tls-*` flags are mutual TLS, all three needed: the agent that serves it serves with
//! them, and `rendezvous serve` takes the `--tls-*` flags.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use elastic::EtcdTls;
use remote_connect::TlsConfig;

use crate::failure::Failure;

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

/// TLS to a rendezvous: to the members of an etcd one, their CA, and this client's certificate
/// for clusters that check clients; with the built-in one, mTLS, all three (this agent's
/// certificate serves the rendezvous too when the agent serves it).
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RdzvTlsArgs {
    /// Talk to the rendezvous over TLS, checking its certificates against these CA
    /// certificates, PEM: etcd's members' (etcd's --cert-file), or with the built-in
    /// rendezvous (mTLS: needs --rdzv-tls-cert and --rdzv-tls-key too) the serving agent's,
    /// which must chain to the same CA as every agent's. Each server's certificate must name
    /// the host --rdzv dials it at, as a DNS name or IP address.
    #[arg(long, value_name = "PATH", requires = "rdzv")]
    pub(crate) rdzv_tls_ca: Option<PathBuf>,
    /// With --rdzv-tls-ca: this agent's certificate chain, PEM, for an etcd that checks
    /// clients (etcd's --client-cert-auth), or the built-in rendezvous (which it also serves
    /// with, when this agent serves it); needs --rdzv-tls-key.
    #[arg(long, value_name = "PATH", requires_all = ["rdzv_tls_key", "rdzv_tls_ca"])]
    pub(crate) rdzv_tls_cert: Option<PathBuf>,
    /// The private key of --rdzv-tls-cert, PEM.
    #[arg(long, value_name = "PATH", requires_all = ["rdzv_tls_cert", "rdzv_tls_ca"])]
    pub(crate) rdzv_tls_key: Option<PathBuf>,
}

impl RdzvTlsArgs {
    /// The first of these flags given, for an error that names it; `None` without any.
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (self.rdzv_tls_ca.is_some(), "--rdzv-tls-ca"),
            (self.rdzv_tls_cert.is_some(), "--rdzv-tls-cert"),
            (self.rdzv_tls_key.is_some(), "--rdzv-tls-key"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The mTLS config of the built-in rendezvous at `rendezvous`: `None` without these flags
    /// (plaintext), else all three files read and checked now; the CA alone is a usage error.
    pub(crate) fn mutual(&self, rendezvous: &str) -> Result<Option<TlsConfig>, Failure> {
        match (&self.rdzv_tls_cert, &self.rdzv_tls_key, &self.rdzv_tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Ok(Some(TlsConfig::from_files(cert, key, ca)?)),
            (None, None, None) => Ok(None),
            // clap's `requires_all` lets a certificate and key through only with the CA.
            _ => Err(Failure::usage(anyhow::anyhow!(
                "--rdzv-tls-ca alone: the built-in rendezvous at {rendezvous} speaks mTLS, \
                 which needs --rdzv-tls-cert and --rdzv-tls-key too (a certificate of that CA \
                 for this agent); the CA alone is for an etcd rendezvous"
            ))),
        }
    }

    /// The TLS settings the flags name, their files read now (an error names the flag and
    /// the path); `None` without --rdzv-tls-ca (plaintext).
    pub(crate) fn read(&self) -> Result<Option<EtcdTls>, Failure> {
        let Some(ca) = &self.rdzv_tls_ca else {
            return Ok(None);
        };
        let tls = EtcdTls::new(read("--rdzv-tls-ca", ca)?);
        Ok(Some(match (&self.rdzv_tls_cert, &self.rdzv_tls_key) {
            (Some(cert), Some(key)) => {
                tls.with_identity(read("--rdzv-tls-cert", cert)?, read("--rdzv-tls-key", key)?)
            }
            // clap's `requires_all` lets only both or neither through.
            _ => tls,
        }))
    }
}

/// A PEM file of `flag`, which must hold at least one PEM block.
fn read(flag: &str, path: &Path) -> Result<Vec<u8>, Failure> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read {flag} {}", path.display()))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(anyhow::anyhow!("{flag} {}: no PEM block in it", path.display()).into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("tfcluster-rdzv-tls-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn message(failure: Failure) -> String {
        format!("{:#}", failure.error.expect("an error"))
    }

    #[test]
    fn no_ca_is_plaintext() {
        let args = RdzvTlsArgs::default();
        assert!(args.read().unwrap().is_none());
        assert_eq!(args.first_given(), None);
    }

    #[test]
    fn files_are_read_with_errors_naming_flag_and_path() {
        let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let ca = scratch("ca.pem", pem);
        let args = RdzvTlsArgs {
            rdzv_tls_ca: Some(ca.clone()),
            ..RdzvTlsArgs::default()
        };
        assert!(args.read().unwrap().is_some());
        assert_eq!(args.first_given(), Some("--rdzv-tls-ca"));

        let missing = std::env::temp_dir().join("tfcluster-no-such-key.pem");
        let args = RdzvTlsArgs {
            rdzv_tls_ca: Some(ca.clone()),
            rdzv_tls_cert: Some(ca.clone()),
            rdzv_tls_key: Some(missing.clone()),
        };
        let err = message(args.read().unwrap_err());
        assert!(
            err.starts_with(&format!(
                "cannot read --rdzv-tls-key {}: ",
                missing.display()
            )),
            "{err}"
        );

        let junk = scratch("junk.pem", "not a certificate");
        let args = RdzvTlsArgs {
            rdzv_tls_ca: Some(junk.clone()),
            ..RdzvTlsArgs::default()
        };
        let err = message(args.read().unwrap_err());
        assert_eq!(
            err,
            format!("--rdzv-tls-ca {}: no PEM block in it", junk.display())
        );
        for path in [ca, junk] {
            let _ = std::fs::remove_file(path);
        }
    }
}
