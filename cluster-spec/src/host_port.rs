//! [`HostPort`]: a server named as `HOST[:PORT]` (a rendezvous, an etcd member), read by the
//! grammar of a task's address with the port made optional: a host name or IPv4 address of
//! `[A-Za-z0-9._-]`, or an IPv6 address in brackets (`[::1]:2379`; a bare IPv6 address
//! with no port, `::1`, is read as the host alone), then a port from 1 to 65535.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use crate::grammar::{AddressProblem, address_problem};

/// Port 0 is "any free port": no server is reached at it.
const PORT_RANGE: &str = "the port must be from 1 to 65535";

/// `HOST[:PORT]`, checked: the host as it goes into an address (an IPv6 address in
/// brackets) and the port, if one was given.
///
/// ```
/// use cluster_spec::HostPort;
///
/// let server: HostPort = "node0:29400".parse()?;
/// assert_eq!((server.host(), server.port()), ("node0", Some(29400)));
/// let bare: HostPort = "::1".parse()?;
/// assert_eq!(bare.with_port_or(2379), "[::1]:2379");
/// let bad = "node0:0".parse::<HostPort>().unwrap_err();
/// assert_eq!(bad.to_string(), "\"node0:0\" is not HOST[:PORT]: the port must be from 1 to 65535");
/// # Ok::<(), cluster_spec::HostPortError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    host: String,
    port: Option<u16>,
}

impl HostPort {
    /// The host, an IPv6 address in brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, if one was given.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// `HOST:PORT`, with `default` where no port was given.
    pub fn with_port_or(&self, default: u16) -> String {
        format!("{}:{}", self.host, self.port.unwrap_or(default))
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

impl FromStr for HostPort {
    type Err = HostPortError;

    fn from_str(text: &str) -> Result<Self, HostPortError> {
        let bad = |problem: AddressProblem| HostPortError {
            value: text.to_owned(),
            reason: match problem {
                AddressProblem::Empty | AddressProblem::EmptyHost => "the host is empty".into(),
                AddressProblem::PortRange => PORT_RANGE.into(),
                problem => problem.to_string(),
            },
        };
        if !text.starts_with('[') && text.matches(':').count() > 1 {
            return match text.parse::<Ipv6Addr>() {
                Ok(_) => Ok(Self {
                    host: format!("[{text}]"),
                    port: None,
                }),
                Err(_) => Err(bad(AddressProblem::ExtraColon)),
            };
        }
        let port_at = match text.strip_prefix('[') {
            Some(rest) => rest
                .find(']')
                .map(|close| close + 2)
                .filter(|&after| text[after..].starts_with(':')),
            None => text.find(':'),
        };
        let Some(colon) = port_at else {
            // The host alone: checked as the host of an address.
            return match address_problem(&format!("{text}:1")) {
                None => Ok(Self {
                    host: text.to_owned(),
                    port: None,
                }),
                Some(problem) => Err(bad(problem)),
            };
        };
        if let Some(problem) = address_problem(text) {
            return Err(bad(problem));
        }
        match text[colon + 1..].parse::<u16>() {
            Ok(port) if port > 0 => Ok(Self {
                host: text[..colon].to_owned(),
                port: Some(port),
            }),
            _ => Err(bad(AddressProblem::PortRange)),
        }
    }
}

/// Why a value is not `HOST[:PORT]`: the value and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not HOST[:PORT]: {reason}")]
pub struct HostPortError {
    value: String,
    reason: String,
}

impl HostPortError {
    /// The value given.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

#[cfg(test)]
mod tests {
    use super::HostPort;

    fn parsed(text: &str) -> (String, Option<u16>) {
        let h: HostPort = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(h.to_string().parse::<HostPort>().as_ref(), Ok(&h), "{text}");
        (h.host().to_owned(), h.port())
    }

    #[test]
    fn hosts_with_and_without_ports() {
        let cases = [
            ("node0", "node0", None),
            ("node0:29400", "node0", Some(29400)),
            ("10.0.0.1:1", "10.0.0.1", Some(1)),
            ("[::1]:2379", "[::1]", Some(2379)),
            ("[::1]", "[::1]", None),
            ("::1", "[::1]", None),
            ("[fe80::1%eth0]:8", "[fe80::1%eth0]", Some(8)),
            ("a_b-c.d", "a_b-c.d", None),
        ];
        for (text, host, port) in cases {
            assert_eq!(parsed(text), (host.to_owned(), port), "{text}");
        }
    }

    #[test]
    fn bad_values_name_themselves_and_the_problem() {
        let cases = [
            ("", "the host is empty"),
            (":80", "the host is empty"),
            ("a:0", "the port must be from 1 to 65535"),
            ("a:99999", "the port must be from 1 to 65535"),
            ("a:x", "the port must be a decimal number"),
            ("a b", "' ' is not allowed in a host name"),
            ("a/b", "'/' is not allowed in a host name"),
            ("[::1", "the bracketed host is not an IPv6 address"),
            ("[::1]x", "'x' is not allowed in a host name"),
            ("a:1:2", "more than one ':'"),
            ("[nope]:1", "the bracketed host is not an IPv6 address"),
        ];
        for (text, reason) in cases {
            let e = text.parse::<HostPort>().unwrap_err();
            assert_eq!(e.value(), text);
            assert!(e.reason().starts_with(reason), "{text}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("{text:?} is not HOST[:PORT]: "))
            );
        }
    }
}
