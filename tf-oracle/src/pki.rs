//! Test certificates: a CA and the certificates it issues, made with rcgen when a test runs,
//! so no key sits in the repository and none expires.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
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
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("valid subject alternative names");
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
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
