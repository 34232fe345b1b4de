//! [`EtcdOptions`]: where the etcd rendezvous keeps its jobs — the etcd cluster's endpoints,
//! the key prefix, TLS — and the timings a job it creates gets. See
//! [`RendezvousClient::etcd`](crate::RendezvousClient::etcd).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use cluster_spec::{HostPort, HostPortError};

use crate::Error;

/// etcd's client port, when an endpoint names none.
pub const ETCD_PORT: u16 = 2379;

/// The key prefix jobs are kept under unless told otherwise.
pub const DEFAULT_PREFIX: &str = "/tfcluster/rendezvous";

/// An etcd rendezvous: the etcd cluster (any of its members' client endpoints), where under
/// it the jobs are, TLS, and the timings of a job this agent creates (a job keeps those of
/// the node that created it, so every agent closes rounds and loses nodes alike).
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    endpoints: Vec<String>,
    prefix: String,
    tls: Option<EtcdTls>,
    timeout: Duration,
    last_call: Duration,
}

/// TLS to etcd: the CA that signed the members' certificates, and this client's identity
/// for clusters that check clients (`--client-cert-auth`). PEM, as etcd's own flags take.
#[derive(Clone)]
pub struct EtcdTls {
    pub(crate) ca_pem: Vec<u8>,
    pub(crate) identity: Option<(Vec<u8>, Vec<u8>)>,
    pub(crate) domain: Option<String>,
}

impl fmt::Debug for EtcdTls {
    /// The key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdTls")
            .field("ca_pem", &format_args!("{} bytes", self.ca_pem.len()))
            .field("identity", &self.identity.is_some())
            .field("domain", &self.domain)
            .finish()
    }
}

impl EtcdTls {
    /// Members checked against `ca_pem`.
    pub fn new(ca_pem: impl Into<Vec<u8>>) -> Self {
        Self {
            ca_pem: ca_pem.into(),
            identity: None,
            domain: None,
        }
    }

    /// This client's certificate and key, for members that ask for one.
    pub fn with_identity(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.identity = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// The name the members' certificates must carry, when it is not the endpoint's host.
    pub fn with_domain_name(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }
}

impl EtcdOptions {
    /// The etcd cluster at `endpoints`, each `HOST[:PORT]` (port 2379 by default) or a client
    /// URL `http://HOST:PORT` (the scheme follows [`tls`](Self::with_tls)), with the
    /// defaults: prefix [`DEFAULT_PREFIX`], no TLS, a 3 s node timeout (each node's lease)
    /// and a 3 s last call, as the built-in rendezvous.
    pub fn new<I, S>(endpoints: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let endpoints = endpoints
            .into_iter()
            .map(|e| endpoint(e.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if endpoints.is_empty() {
            return Err(Error::InvalidEtcdEndpoint {
                value: String::new(),
                reason: "no endpoint given".to_owned(),
            });
        }
        Ok(Self {
            endpoints,
            prefix: DEFAULT_PREFIX.to_owned(),
            tls: None,
            timeout: crate::DEFAULT_TIMEOUT,
            last_call: crate::DEFAULT_LAST_CALL,
        })
    }

    /// The members' client endpoints, `HOST:PORT`.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Keeps jobs under `prefix` (each job under `PREFIX/RDZV_ID/`).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into().trim_end_matches('/').to_owned();
        self
    }

    /// Talks to etcd over TLS.
    pub fn with_tls(mut self, tls: EtcdTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// How long a node may be silent before it is lost: the TTL of its lease (etcd counts
    /// whole seconds, at least its own minimum), and for a job this agent creates, its
    /// heartbeat timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// For a job this agent creates: how long a round with its minimum nodes waits for more.
    pub fn with_last_call(mut self, last_call: Duration) -> Self {
        self.last_call = last_call;
        self
    }

    pub(crate) fn key_prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn tls_config(&self) -> Option<&EtcdTls> {
        self.tls.as_ref()
    }

    pub(crate) fn node_timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn job_last_call(&self) -> Duration {
        self.last_call
    }

    /// The URLs etcd's client dials.
    pub(crate) fn urls(&self) -> Vec<String> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        self.endpoints
            .iter()
            .map(|e| format!("{scheme}://{e}"))
            .collect()
    }
}

impl fmt::Display for EtcdOptions {
    /// `etcd://HOST:PORT,HOST:PORT`: how errors name the rendezvous.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "etcd://{}", self.endpoints.join(","))
    }
}

impl FromStr for EtcdOptions {
    type Err = Error;

    /// `etcd://HOST[:PORT][,HOST[:PORT]...]`, or the list without the scheme (each item may
    /// be an etcd client URL, `http://HOST:PORT`, as etcdctl takes them).
    fn from_str(s: &str) -> Result<Self, Error> {
        let list = s.strip_prefix("etcd://").unwrap_or(s);
        Self::new(list.split(','))
    }
}

/// One endpoint, `HOST:PORT` with the default port filled in (a client URL's scheme
/// dropped: TLS decides it).
fn endpoint(value: &str) -> Result<String, Error> {
    let bad = |reason: &str| Error::InvalidEtcdEndpoint {
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    let bare = value.trim();
    let bare = ["http://", "https://"]
        .iter()
        .find_map(|scheme| bare.strip_prefix(scheme))
        .unwrap_or(bare);
    let host_port: HostPort = bare.parse().map_err(|e: HostPortError| bad(e.reason()))?;
    Ok(host_port.with_port_or(ETCD_PORT))
}

/// A job id as one segment of a key: `/` and `%` escaped, so no id's keys are under another's.
pub(crate) fn key_segment(id: &str) -> String {
    id.replace('%', "%25").replace('/', "%2F")
}

/// The job id of a key segment [`key_segment`] made.
pub(crate) fn segment_id(segment: &str) -> String {
    segment.replace("%2F", "/").replace("%25", "%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_with_the_default_port() {
        let o: EtcdOptions = "etcd://a:1,b,[::1]:3,::2".parse().unwrap();
        assert_eq!(o.endpoints(), ["a:1", "b:2379", "[::1]:3", "[::2]:2379"]);
        assert_eq!(o.to_string(), "etcd://a:1,b:2379,[::1]:3,[::2]:2379");
        assert_eq!(o.urls()[0], "http://a:1");
        let o: EtcdOptions = "10.0.0.1:2379,http://b:4,https://c".parse().unwrap();
        assert_eq!(o.endpoints(), ["10.0.0.1:2379", "b:4", "c:2379"]);
    }

    #[test]
    fn bad_endpoints_name_the_value() {
        for bad in [
            "",
            "etcd://",
            "a:0",
            "a:x",
            "a,,b",
            "[::1",
            "ftp://a:1",
            "a b",
        ] {
            let err = bad.parse::<EtcdOptions>().unwrap_err().to_string();
            assert!(err.starts_with("invalid etcd endpoint"), "{bad}: {err}");
        }
        let err = "a:99999".parse::<EtcdOptions>().unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid etcd endpoint \"a:99999\": the port must be from 1 to 65535"
        );
    }

    #[test]
    fn ids_cannot_reach_under_each_other() {
        assert_eq!(key_segment("a/b%c"), "a%2Fb%25c");
        for id in ["a/b%c", "%2F", "x%25/"] {
            assert_eq!(segment_id(&key_segment(id)), id);
        }
    }
}
