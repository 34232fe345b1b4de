//! Test support: a certificate authority and the certificates it issues, made with rcgen when a
//! test runs, so no key sits in the repository and none expires.
//!
//! The one test PKI of the workspace: remote-connect's and the CLI's TLS tests (through
//! `tf_oracle`, which re-exports it) and etcd-cluster's TLS clusters make their CA here.
//!
//! ```
//! use test_pki::{TestCa, Usage};
//!
//! let ca = TestCa::new("cluster CA");
//! let server = ca.issue(&["127.0.0.1", "localhost"]);
//! let client = ca.issue_as("a client", &[], Usage::Client);
//! assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
//! assert!(server.key.starts_with("-----BEGIN PRIVATE KEY-----"));
//! assert!(client.cert.starts_with("-----BEGIN CERTIFICATE-----"));
//! ```

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// What a certificate made by [`TestCa::issue_as`] authenticates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// A server, and a client too (peers that call each other over mutual TLS).
    ServerAndClient,
    /// A client only.
    Client,
}

/// A certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The certificate.
    pub cert: String,
    /// Its key (PKCS#8).
    pub key: String,
}

/// The three files of one peer's TLS config, as [`TestCa::write`] left them.
#[derive(Clone, Debug)]
pub struct PemFiles {
    /// The certificate.
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// The CA's certificate.
    pub ca: PathBuf,
}

impl TestCa {
    /// A new CA called `name`.
    ///
    /// # Panics
    ///
    /// If rcgen cannot make a key or certificate.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("a CA certificate");
        Self { issuer }
    }

    /// The CA's certificate, PEM.
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `names` (DNS names or IP addresses, as subject alternative names),
    /// good for both server and client authentication.
    ///
    /// # Panics
    ///
    /// If a name is neither, or rcgen fails.
    pub fn issue(&self, names: &[&str]) -> Issued {
        self.issue_with(None, names, Usage::ServerAndClient)
    }

    /// A certificate whose subject is `common_name`, for `names` (DNS names or IP addresses, as
    /// subject alternative names; none for a client that is no server), good for `usage`.
    ///
    /// # Panics
    ///
    /// If a name is neither a DNS name nor an IP address, or rcgen fails.
    pub fn issue_as(&self, common_name: &str, names: &[&str], usage: Usage) -> Issued {
        self.issue_with(Some(common_name), names, usage)
    }

    /// A certificate for `names` good for `usage`, its subject `common_name` when given
    /// (rcgen's default subject when not).
    fn issue_with(&self, common_name: Option<&str>, names: &[&str], usage: Usage) -> Issued {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("valid subject alternative names");
        if let Some(common_name) = common_name {
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
        }
        params.extended_key_usages = match usage {
            Usage::ServerAndClient => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("a certificate");
        Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// [`issue`](Self::issue)s a certificate for `names` and writes it, its key and the CA's
    /// certificate into `dir` as `<stem>.crt`, `<stem>.key` and `<stem>-ca.crt`.
    ///
    /// # Panics
    ///
    /// If a file cannot be written.
    pub fn write(&self, dir: &Path, stem: &str, names: &[&str]) -> PemFiles {
        let issued = self.issue(names);
        let files = PemFiles {
            cert: dir.join(format!("{stem}.crt")),
            key: dir.join(format!("{stem}.key")),
            ca: dir.join(format!("{stem}-ca.crt")),
        };
        for (path, text) in [
            (&files.cert, &issued.cert),
            (&files.key, &issued.key),
            (&files.ca, &self.cert_pem()),
        ] {
            std::fs::write(path, text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        files
    }
}
