//! How tasks are dialled: plaintext `http://`, as TensorFlow, or, with
//! [`ConnectOptions::tls`](crate::ConnectOptions::tls), `https://` with this process's client
//! certificate.

use tonic::transport::Endpoint;

use super::ConnectOptions;

/// The scheme and TLS settings of every channel of one connect.
#[derive(Clone, Debug, Default)]
pub(crate) struct Transport {
    #[cfg(feature = "tls")]
    tls: Option<crate::TlsConfig>,
}

impl Transport {
    pub(crate) fn of(options: &ConnectOptions) -> Self {
        #[cfg(not(feature = "tls"))]
        let _ = options;
        Self {
            #[cfg(feature = "tls")]
            tls: options.tls.clone(),
        }
    }

    /// Whether channels are TLS.
    pub(crate) fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The endpoint of `address` (`host:port`). Under TLS the server's certificate must name
    /// `host` (a DNS name or an IP address) and chain to the CA.
    pub(crate) fn endpoint(&self, address: &str) -> Result<Endpoint, tonic::transport::Error> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            return Endpoint::from_shared(format!("https://{address}"))?.tls_config(tls.client());
        }
        Endpoint::from_shared(format!("http://{address}"))
    }
}
