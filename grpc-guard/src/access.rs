//! [`Access`]: who may connect to a server and over what: its allow list and its TLS. One
//! value that every server of the workspace takes once (the TaskServer's builder, the
//! rendezvous's), so the choice is declared in one place.

use std::sync::Arc;

use crate::network::Network;

/// Who may connect to a server ([`with_allow`](Self::with_allow)) and whether over mTLS
/// ([`with_tls`](Self::with_tls)). The default: every peer, plaintext.
///
/// ```
/// use grpc_guard::Access;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let access = Access::default().with_allow(["127.0.0.0/8".parse()?, "::1".parse()?]);
/// assert_eq!(access.allow().map(<[_]>::len), Some(2));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Access {
    allow: Option<Arc<[Network]>>,
    #[cfg(feature = "tls")]
    tls: Option<crate::TlsConfig>,
}

impl Access {
    /// Accept connections only from peers in `networks` (addresses or CIDR networks, IPv4 or
    /// IPv6; an IPv4 peer of a dual-stack socket counts as its IPv4 address). Any other peer's
    /// connection is closed as soon as it is accepted, before TLS or HTTP/2, told why in a
    /// `GOAWAY` where it speaks plaintext or a TLS `access_denied` alert where it speaks TLS,
    /// and counted in a warning logged at most every 10 s. An empty list refuses everyone.
    /// Default: every peer.
    pub fn with_allow(mut self, networks: impl IntoIterator<Item = Network>) -> Self {
        self.allow = Some(networks.into_iter().collect());
        self
    }

    /// Serve over TLS only, requiring every client to present a certificate that chains to
    /// the config's CA (mTLS): a plaintext client, one without a certificate, or one whose
    /// certificate another CA issued, is refused.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_tls(mut self, config: crate::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// The networks allowed, or `None` for every peer.
    pub fn allow(&self) -> Option<&[Network]> {
        self.allow.as_deref()
    }

    /// The TLS served, or `None` for plaintext.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(&self) -> Option<&crate::TlsConfig> {
        self.tls.as_ref()
    }

    /// Whether the server serves TLS.
    pub(crate) fn serves_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The allow list, shared.
    pub(crate) fn allowed(&self) -> Option<Arc<[Network]>> {
        self.allow.clone()
    }
}
