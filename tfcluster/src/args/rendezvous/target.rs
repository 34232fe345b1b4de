//! What the rendezvous flags name: `--rdzv` (the built-in rendezvous's `HOST[:PORT]`, or an
//! etcd cluster's `etcd://HOST[:PORT][,HOST[:PORT]...]`), `--rdzv-backend` and TLS
//! (`--rdzv-tls-*`: to etcd, or mTLS with the built-in rendezvous), checked at the edge into
//! one [`Rendezvous`], for `run --rdzv` and `--from rendezvous` alike.

use std::fmt;
use std::str::FromStr;

use anyhow::anyhow;
use cluster_spec::{HostPort, HostPortError};
use elastic::{ClientOptions, EtcdOptions, RENDEZVOUS_PORT, RendezvousClient};
use remote_connect::TlsConfig;

use crate::args::tls::RdzvTlsArgs;
use crate::failure::Failure;

/// `HOST[:PORT]` ([`HostPort`]'s grammar): a rendezvous endpoint, at [`RENDEZVOUS_PORT`] when
/// no port is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The host, an IPv6 address in brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl FromStr for Endpoint {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let host_port: HostPort = text.parse().map_err(|e: HostPortError| e.to_string())?;
        Ok(Self {
            host: host_port.host().to_owned(),
            port: host_port.port().unwrap_or(RENDEZVOUS_PORT),
        })
    }
}

/// Which rendezvous `--rdzv` names (`--rdzv-backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Backend {
    /// tfcluster's own, over gRPC (plaintext, or mTLS with all three --rdzv-tls-* flags),
    /// served by the agent on its host (or by `tfcluster rendezvous serve`): the job lives
    /// while that host does.
    BuiltIn,
    /// An etcd cluster (v3): nothing to serve, every agent is equal, and the job survives
    /// the loss of any host while a majority of etcd's members lives.
    Etcd,
}

/// `--rdzv`'s value, its form checked as clap parses it; which rendezvous it names is decided
/// with `--rdzv-backend` ([`Rendezvous::from_flags`]).
#[derive(Clone, Debug)]
pub(crate) enum RdzvValue {
    /// `etcd://HOST[:PORT][,HOST[:PORT]...]`.
    Etcd(EtcdOptions),
    /// No `etcd://`: `HOST[:PORT]` (either backend), or a list `HOST[:PORT],HOST[:PORT]...`
    /// whose items may be etcd client URLs, `http://HOST:PORT` (etcd's members, with
    /// `--rdzv-backend etcd`).
    Bare(String),
}

impl FromStr for RdzvValue {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.starts_with("etcd://") {
            return text
                .parse()
                .map(Self::Etcd)
                .map_err(|e: elastic::Error| e.to_string());
        }
        if text.contains(',') || text.contains("://") {
            // etcd's members, possibly as client URLs (`http://HOST:PORT`, as etcdctl takes
            // them); no other rendezvous takes a list or a scheme.
            if let Some((scheme, _)) = text.split_once("://")
                && !matches!(scheme, "http" | "https")
            {
                return Err(format!(
                    "{text:?}: no rendezvous is reached by {scheme}://; expected HOST[:PORT] \
                     (the built-in rendezvous) or etcd://HOST[:PORT][,HOST[:PORT]...]"
                ));
            }
            text.parse::<EtcdOptions>().map_err(|e| e.to_string())?;
        } else {
            text.parse::<Endpoint>()?;
        }
        Ok(Self::Bare(text.to_owned()))
    }
}

impl fmt::Display for RdzvValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Etcd(etcd) => etcd.fmt(f),
            Self::Bare(text) => f.write_str(text),
        }
    }
}

/// The rendezvous of an elastic job, as the flags name it.
#[derive(Clone, Debug)]
pub(crate) enum Rendezvous {
    /// The built-in rendezvous at an endpoint, over mTLS with the config when there is one
    /// (the agent that serves it serves with the same).
    BuiltIn(Endpoint, Option<TlsConfig>),
    /// The rendezvous kept in an etcd cluster (TLS and timings in the options).
    Etcd(EtcdOptions),
}

impl fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn(endpoint, _) => endpoint.fmt(f),
            Self::Etcd(etcd) => etcd.fmt(f),
        }
    }
}

impl Rendezvous {
    /// The rendezvous `--rdzv VALUE`, `--rdzv-backend` and the `--rdzv-tls-*` flags name
    /// together: the backend is `backend`, else etcd for `etcd://…`, else the built-in one.
    /// Flags that contradict each other are a usage error (exit status 2) naming both;
    /// the TLS files are read now.
    pub(crate) fn from_flags(
        value: &RdzvValue,
        backend: Option<Backend>,
        tls: &RdzvTlsArgs,
    ) -> Result<Self, Failure> {
        let etcd = match (value, backend) {
            (RdzvValue::Etcd(etcd), None | Some(Backend::Etcd)) => etcd.clone(),
            (RdzvValue::Etcd(_), Some(Backend::BuiltIn)) => {
                return Err(Failure::usage(anyhow!(
                    "--rdzv-backend built-in cannot use --rdzv {value}, an etcd cluster: give \
                     the built-in rendezvous's HOST[:PORT], or drop --rdzv-backend"
                )));
            }
            (RdzvValue::Bare(text), Some(Backend::Etcd)) => {
                if text.contains("https://") && tls.first_given().is_none() {
                    return Err(Failure::usage(anyhow!(
                        "--rdzv {text} names https:// endpoints: TLS to etcd needs \
                         --rdzv-tls-ca"
                    )));
                }
                text.parse()
                    .map_err(|e| Failure::usage(anyhow!("--rdzv-backend etcd: --rdzv: {e}")))?
            }
            (RdzvValue::Bare(text), None | Some(Backend::BuiltIn)) => {
                if text.contains(',') || text.contains("://") {
                    return Err(Failure::usage(anyhow!(
                        "--rdzv {text} names etcd's members (several endpoints, or client \
                         URLs), which the built-in rendezvous cannot use: give \
                         --rdzv-backend etcd, or one HOST[:PORT] for the built-in rendezvous"
                    )));
                }
                let endpoint = text
                    .parse()
                    .map_err(|e| Failure::usage(anyhow!("--rdzv: {e}")))?;
                return Ok(Self::BuiltIn(endpoint, tls.mutual(text)?));
            }
        };
        Ok(Self::Etcd(match tls.read()? {
            Some(settings) => etcd.with_tls(settings),
            None => etcd,
        }))
    }

    /// A client of this rendezvous with `options` (on etcd, no connection yet either way:
    /// the first call connects).
    pub(crate) async fn client(&self, options: ClientOptions) -> Result<RendezvousClient, Failure> {
        Ok(match self {
            Self::BuiltIn(endpoint, tls) => {
                let options = match tls {
                    Some(tls) => options.with_tls(tls.clone()),
                    None => options,
                };
                RendezvousClient::new(endpoint.to_string(), options)?
            }
            Self::Etcd(etcd) => RendezvousClient::etcd(etcd.clone(), options).await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_the_default_port() {
        let e: Endpoint = "node0".parse().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("node0", 29400));
        let e: Endpoint = "10.0.0.1:1234".parse().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("10.0.0.1", 1234));
        let e: Endpoint = "[::1]:5".parse().unwrap();
        assert_eq!((e.to_string(), e.port), ("[::1]:5".to_owned(), 5));
        let e: Endpoint = "::1".parse().unwrap();
        assert_eq!(e.to_string(), "[::1]:29400");
    }

    #[test]
    fn bad_endpoints_name_the_value() {
        for bad in ["", ":1", "h:0", "h:x", "[::1", "a b"] {
            let err = bad.parse::<Endpoint>().unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }

    fn resolve(value: &str, backend: Option<Backend>) -> Result<Rendezvous, Failure> {
        Rendezvous::from_flags(&value.parse().unwrap(), backend, &RdzvTlsArgs::default())
    }

    /// The message and exit status of a failure.
    fn failure(result: Result<Rendezvous, Failure>) -> (String, u8) {
        let failure = result.expect_err("a failure");
        (
            format!("{:#}", failure.error.expect("a message")),
            failure.code,
        )
    }

    #[test]
    fn the_backend_follows_the_scheme_unless_told() {
        let r = resolve("node0", None).unwrap();
        assert!(
            matches!(&r, Rendezvous::BuiltIn(e, None) if e.port == 29400),
            "{r:?}"
        );
        let r = resolve("node0:1234", Some(Backend::BuiltIn)).unwrap();
        assert_eq!(r.to_string(), "node0:1234");
        let r = resolve("etcd://a,b:1", None).unwrap();
        assert_eq!(r.to_string(), "etcd://a:2379,b:1");
        let r = resolve("etcd://a", Some(Backend::Etcd)).unwrap();
        assert_eq!(r.to_string(), "etcd://a:2379");
        // A bare value is etcd's members when told so, with etcd's port.
        let r = resolve("h1:2379,h2", Some(Backend::Etcd)).unwrap();
        assert!(matches!(&r, Rendezvous::Etcd(_)), "{r:?}");
        assert_eq!(r.to_string(), "etcd://h1:2379,h2:2379");
        let r = resolve("node0", Some(Backend::Etcd)).unwrap();
        assert_eq!(r.to_string(), "etcd://node0:2379");
        // etcdctl's form of the list.
        let r = resolve("http://h1:1,http://h2:2", Some(Backend::Etcd)).unwrap();
        assert_eq!(r.to_string(), "etcd://h1:1,h2:2");
    }

    #[test]
    fn contradicting_flags_are_usage_errors_naming_both() {
        let (message, code) = failure(resolve("etcd://a:1", Some(Backend::BuiltIn)));
        assert_eq!(code, 2);
        assert!(
            message.starts_with("--rdzv-backend built-in cannot use --rdzv etcd://a:1,"),
            "{message}"
        );
        for list in ["a:1,b:2", "http://a:1"] {
            let (message, code) = failure(resolve(list, None));
            assert_eq!(code, 2);
            assert!(
                message.starts_with(&format!("--rdzv {list} names etcd's members")),
                "{message}"
            );
        }
        let (message, code) = failure(resolve("https://a:1", Some(Backend::Etcd)));
        assert_eq!(code, 2);
        assert!(message.contains("needs --rdzv-tls-ca"), "{message}");
        let tls = RdzvTlsArgs {
            rdzv_tls_ca: Some("/ca.pem".into()),
            ..RdzvTlsArgs::default()
        };
        let value = "node0:29400".parse().unwrap();
        let (message, code) = failure(Rendezvous::from_flags(&value, None, &tls));
        assert_eq!(code, 2);
        assert!(
            message.starts_with(
                "--rdzv-tls-ca alone: the built-in rendezvous at node0:29400 speaks mTLS"
            ),
            "{message}"
        );
    }

    #[test]
    fn bad_values_name_the_value() {
        for (bad, says) in [
            ("h:0", "\"h:0\" is not HOST[:PORT]: the port must be"),
            ("etcd://a:0", "invalid etcd endpoint \"a:0\""),
            ("etcd://", "invalid etcd endpoint"),
            ("a,b:x", "invalid etcd endpoint \"b:x\""),
            (
                "ftp://a:1",
                "\"ftp://a:1\": no rendezvous is reached by ftp://",
            ),
            ("etcd://ftp://a", "invalid etcd endpoint \"ftp://a\""),
            ("http://a:0", "invalid etcd endpoint \"http://a:0\""),
        ] {
            let err = bad.parse::<RdzvValue>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
