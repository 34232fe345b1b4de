//! Errors of making a [`TlsConfig`](crate::TlsConfig): which part, from where, and why.

use std::path::PathBuf;

/// A certificate chain, key or CA that cannot be used. `part` is `certificate chain`,
/// `private key` or `CA certificates`; `from` is the file, or `given PEM`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The file cannot be read.
    #[error("cannot read the TLS {part} {}", path.display())]
    Read {
        /// Which part.
        part: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The text is not PEM, or holds no item of the part's kind (`no items found`: a
    /// `CERTIFICATE` block for a chain or CA, a `PRIVATE KEY`, `RSA PRIVATE KEY` or
    /// `EC PRIVATE KEY` block for a key).
    #[error("the TLS {part} ({from}) is unusable")]
    Pem {
        /// Which part.
        part: &'static str,
        /// The file, or `given PEM`.
        from: String,
        /// The PEM reader's reason.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refuses it: a key of an unsupported type or that does not match the
    /// certificate, a certificate it cannot parse, a CA that is no valid trust anchor.
    #[error("the TLS {part} ({from}) is refused")]
    Rejected {
        /// Which part.
        part: &'static str,
        /// The file, or `given PEM`.
        from: String,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
}
