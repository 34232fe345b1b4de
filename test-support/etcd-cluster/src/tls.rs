//! The TLS files of a cluster: the workspace's test CA (`test-pki`), a certificate every member
//! presents to clients and peers, and one for clients, written into the cluster's directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use test_pki::{TestCa, Usage};

/// The PEM files a client of a TLS cluster
/// ([`EtcdCluster::start_local_tls`](crate::EtcdCluster::start_local_tls)) needs, inside the
/// cluster's directory (removed with the cluster).
#[derive(Clone)]
pub struct TlsFiles {
    /// The CA that signed every member's certificate and [`client_cert`](Self::client_cert).
    pub ca: PathBuf,
    /// A client certificate the members accept (signed by [`ca`](Self::ca)).
    pub client_cert: PathBuf,
    /// Its private key (PKCS#8).
    pub client_key: PathBuf,
    /// The CA itself, for more client certificates ([`client_as`](Self::client_as)).
    ca_issuer: Arc<TestCa>,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFiles")
            .field("ca", &self.ca)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .finish_non_exhaustive()
    }
}

impl TlsFiles {
    /// Another client certificate the members accept, its subject `common_name`: with etcd's
    /// auth enabled, a client certificate's common name is the etcd user it acts as. Written
    /// beside [`client_cert`](Self::client_cert) as `client-NAME.crt` and `.key`; returns
    /// their paths.
    ///
    /// # Panics
    ///
    /// If rcgen fails or a file cannot be written.
    pub fn client_as(&self, common_name: &str) -> (PathBuf, PathBuf) {
        let issued = self.ca_issuer.issue_as(common_name, &[], Usage::Client);
        let dir = self.client_cert.parent().unwrap_or(Path::new("."));
        let stem: String = common_name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let (cert, key) = (
            dir.join(format!("client-{stem}.crt")),
            dir.join(format!("client-{stem}.key")),
        );
        for (path, text) in [(&cert, issued.cert), (&key, issued.key)] {
            fs::write(path, text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        (cert, key)
    }
}

/// The server certificate and key every member of a TLS cluster in `dir` uses.
pub(crate) fn server_pem(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("server.crt"), dir.join("server.key"))
}

/// Makes a CA, a server certificate for 127.0.0.1, localhost and `more` addresses (for clients
/// and, as server and client both, for peers) and a client certificate, and writes them as PEM
/// into `dir`.
pub(crate) fn make_tls(dir: &Path, more: &[&str]) -> TlsFiles {
    let ca = TestCa::new("etcd-cluster test CA");
    let names: Vec<&str> = ["127.0.0.1", "localhost"]
        .into_iter()
        .chain(more.iter().copied())
        .collect();
    let server = ca.issue_as("etcd-cluster member", &names, Usage::ServerAndClient);
    let client = ca.issue_as("etcd-cluster client", &[], Usage::Client);
    let files = TlsFiles {
        ca: dir.join("ca.crt"),
        client_cert: dir.join("client.crt"),
        client_key: dir.join("client.key"),
        ca_issuer: Arc::new(ca),
    };
    let (server_cert_path, server_key_path) = server_pem(dir);
    for (path, text) in [
        (&files.ca, files.ca_issuer.cert_pem()),
        (&files.client_cert, client.cert),
        (&files.client_key, client.key),
        (&server_cert_path, server.cert),
        (&server_key_path, server.key),
    ] {
        fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    files
}
