//! The TLS files of a cluster: the workspace's test CA (`test-pki`), a certificate every member
//! presents to clients and peers, and one for clients, written into the cluster's directory.

use std::fs;
use std::path::{Path, PathBuf};

use test_pki::{TestCa, Usage};

/// The PEM files a client of a TLS cluster
/// ([`EtcdCluster::start_local_tls`](crate::EtcdCluster::start_local_tls)) needs, inside the
/// cluster's directory (removed with the cluster).
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA that signed every member's certificate and [`client_cert`](Self::client_cert).
    pub ca: PathBuf,
    /// A client certificate the members accept (signed by [`ca`](Self::ca)).
    pub client_cert: PathBuf,
    /// Its private key (PKCS#8).
    pub client_key: PathBuf,
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
    };
    let (server_cert_path, server_key_path) = server_pem(dir);
    for (path, text) in [
        (&files.ca, ca.cert_pem()),
        (&files.client_cert, client.cert),
        (&files.client_key, client.key),
        (&server_cert_path, server.cert),
        (&server_key_path, server.key),
    ] {
        fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    files
}
