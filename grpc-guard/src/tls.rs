//! [`TlsConfig`]: the certificates of TLS with client certificates (mTLS) between Rust peers,
//! checked once when the config is made so a bad file fails at startup, not at the first
//! connection.

mod error;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::RootCertStore;
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

pub use error::TlsError;

/// How long a peer may take over its TLS handshake before the server drops the connection (a
/// peer that connects and says nothing would otherwise hold a handshake task forever).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

const CHAIN: &str = "certificate chain";
const KEY: &str = "private key";
const CA: &str = "CA certificates";

/// This peer's certificate chain and key, and the CA that every other peer's certificate must
/// chain to: the same config serves ([`Access::with_tls`](crate::Access::with_tls), which
/// remote-connect's `TaskServerBuilder` and elastic's `RendezvousServerBuilder` take) and dials
/// ([`client`](Self::client): remote-connect's `ConnectOptions::with_tls`, elastic's
/// `ClientOptions::with_tls`).
///
/// Both directions are verified: a server asks every client for a certificate and refuses a
/// client without one that chains to the CA; a client checks the server's certificate against
/// the CA **and the host of the task's address** (`localhost` in `localhost:2222`, the IP
/// address in `10.0.0.7:2222`), so each server's certificate must name its host as a DNS or
/// IP subject alternative name. Cheap to clone.
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<Pems>,
}

/// The checked PEM texts, kept as text because tonic's TLS takes PEM.
struct Pems {
    chain: Vec<u8>,
    key: Vec<u8>,
    ca: Vec<u8>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// A config from PEM texts: `cert_chain` (this peer's certificate first, then any
    /// intermediates), its `key` (PKCS#8, PKCS#1 or SEC1) and `ca` (one or more CA
    /// certificates that peers' certificates must chain to).
    ///
    /// # Errors
    ///
    /// [`TlsError`] naming the part (`certificate chain`, `private key`, `CA certificates`)
    /// that is not PEM, holds no item of its kind, or that rustls refuses (a key that does not
    /// match the certificate, an unsupported key type, a CA that is no valid trust anchor).
    pub fn from_pem(
        cert_chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
        ca: impl Into<Vec<u8>>,
    ) -> Result<Self, TlsError> {
        Self::checked(
            (cert_chain.into(), "given PEM"),
            (key.into(), "given PEM"),
            (ca.into(), "given PEM"),
        )
    }

    /// A config from PEM files, as [`from_pem`](Self::from_pem).
    ///
    /// # Errors
    ///
    /// [`TlsError::Read`] naming the file that cannot be read, else as
    /// [`from_pem`](Self::from_pem) with the file named.
    pub fn from_files(
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
        ca: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let (chain_path, key_path, ca_path) = (cert_chain.as_ref(), key.as_ref(), ca.as_ref());
        let chain = read(CHAIN, chain_path)?;
        let key = read(KEY, key_path)?;
        let ca = read(CA, ca_path)?;
        Self::checked(
            (chain, &chain_path.display().to_string()),
            (key, &key_path.display().to_string()),
            (ca, &ca_path.display().to_string()),
        )
    }

    fn checked(
        (chain, chain_from): (Vec<u8>, &str),
        (key, key_from): (Vec<u8>, &str),
        (ca, ca_from): (Vec<u8>, &str),
    ) -> Result<Self, TlsError> {
        let certs = certificates(CHAIN, chain_from, &chain)?;
        let private = PrivateKeyDer::from_pem_slice(&key).map_err(|e| pem(KEY, key_from, e))?;
        let signing = any_supported_type(&private).map_err(|e| rejected(KEY, key_from, e))?;
        CertifiedKey::new(certs, signing)
            .keys_match()
            .map_err(|e| match e {
                rustls::Error::InconsistentKeys(_) => rejected(KEY, key_from, e),
                // The end-entity certificate itself could not be parsed.
                _ => rejected(CHAIN, chain_from, e),
            })?;
        let mut roots = RootCertStore::empty();
        for cert in certificates(CA, ca_from, &ca)? {
            roots.add(cert).map_err(|e| rejected(CA, ca_from, e))?;
        }
        Ok(Self {
            inner: Arc::new(Pems { chain, key, ca }),
        })
    }

    /// The server side: this identity, client certificates required and checked against the CA.
    pub(crate) fn server(&self) -> ServerTlsConfig {
        ServerTlsConfig::new()
            .identity(self.identity())
            .client_ca_root(Certificate::from_pem(&self.inner.ca))
            .timeout(HANDSHAKE_TIMEOUT)
    }

    /// The client side, for a tonic `Endpoint` dialled as `https://HOST:PORT`: this identity
    /// presented, the server checked against the CA and the host of the address dialled.
    pub fn client(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .identity(self.identity())
            .ca_certificate(Certificate::from_pem(&self.inner.ca))
    }

    fn identity(&self) -> Identity {
        Identity::from_pem(&self.inner.chain, &self.inner.key)
    }
}

fn read(part: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        part,
        path: path.to_owned(),
        source,
    })
}

/// Every `CERTIFICATE` block of `text`, at least one.
fn certificates(
    part: &'static str,
    from: &str,
    text: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(part, from, e))?;
    if certs.is_empty() {
        return Err(pem(part, from, rustls::pki_types::pem::Error::NoItemsFound));
    }
    Ok(certs)
}

fn pem(part: &'static str, from: &str, source: rustls::pki_types::pem::Error) -> TlsError {
    TlsError::Pem {
        part,
        from: from.to_owned(),
        source,
    }
}

fn rejected(part: &'static str, from: &str, source: rustls::Error) -> TlsError {
    TlsError::Rejected {
        part,
        from: from.to_owned(),
        source,
    }
}
