//! [`Network`]: an IP address or CIDR network, what [`Access::with_allow`](crate::Access::with_allow)
//! lets connect, and [`InvalidNetwork`], an entry that is none.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IPv4 or IPv6 network: `192.0.2.0/24`, `2001:db8::/32`, or one address (`127.0.0.1`,
/// `::1`, the same as `/32` or `/128`). Host bits must be zero (`192.0.2.1/24` is refused as
/// a likely typo).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// The network of `addr` with `prefix` leading bits.
    ///
    /// # Errors
    ///
    /// [`InvalidNetwork`] for a prefix longer than the address or host bits that are set.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self, InvalidNetwork> {
        let invalid = |reason: String| InvalidNetwork {
            input: format!("{addr}/{prefix}"),
            reason,
        };
        let bits = bits_of(addr);
        if prefix > bits {
            return Err(invalid(format!(
                "prefix /{prefix} is longer than the {bits} bits of the address"
            )));
        }
        let network = Self { addr, prefix };
        let masked = network.masked(addr);
        if masked != addr {
            return Err(invalid(format!(
                "host bits are set (the network is {masked}/{prefix})"
            )));
        }
        Ok(network)
    }

    /// Whether `ip` is in the network. An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, how a
    /// dual-stack socket sees an IPv4 peer) counts as its IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        bits_of(ip) == bits_of(self.addr) && self.masked(ip) == self.addr
    }

    /// `ip` with the bits past the prefix cleared (`ip` of the network's family).
    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }
}

/// The longest allow-list entry read: longer than any network written out
/// (`ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128` is 49 bytes).
const MAX_ENTRY: usize = 64;

/// An entry of an allow list that is no IP address or network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid network {input:?}: {reason}")]
#[non_exhaustive]
pub struct InvalidNetwork {
    /// The entry as given; only its first 64 bytes and `…` when it is longer
    /// (no network is), so no message grows with its input.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

fn bits_of(addr: IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

impl FromStr for Network {
    type Err = InvalidNetwork;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_ENTRY {
            let mut end = MAX_ENTRY;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            return Err(InvalidNetwork {
                input: format!("{}…", &s[..end]),
                reason: format!("longer than any network ({} bytes)", s.len()),
            });
        }
        let invalid = |reason: &str| InvalidNetwork {
            input: s.to_owned(),
            reason: reason.to_owned(),
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| invalid("not an IPv4 or IPv6 address"))?;
        let prefix = match prefix {
            None => bits_of(addr),
            // Digits only: u8's parser would take `+24`.
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => p
                .parse()
                .map_err(|_| invalid("the prefix length is not 0..=128"))?,
            Some(_) => return Err(invalid("the prefix length is not a number")),
        };
        Self::new(addr, prefix).map_err(|e| InvalidNetwork {
            input: s.to_owned(),
            reason: e.reason,
        })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Network {
        s.parse().unwrap()
    }

    #[test]
    fn parses_addresses_and_networks_of_both_families() {
        assert_eq!(net("127.0.0.1").to_string(), "127.0.0.1/32");
        assert_eq!(net("192.0.2.0/24").to_string(), "192.0.2.0/24");
        assert_eq!(net("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(net("::1").to_string(), "::1/128");
        assert_eq!(net("2001:db8::/32").to_string(), "2001:db8::/32");
    }

    #[test]
    fn a_long_entry_is_refused_with_a_short_message() {
        let longest = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128";
        assert_eq!(
            net(longest).to_string(),
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"
        );
        let long = format!("10.0.0.0/8{}", "é".repeat(10_000));
        let e = long.parse::<Network>().unwrap_err();
        assert_eq!(e.reason, "longer than any network (20010 bytes)");
        assert!(e.input.starts_with("10.0.0.0/8é") && e.input.ends_with('…'));
        assert!(e.to_string().len() < 150, "{e}");
    }

    #[test]
    fn contains_only_its_own_addresses() {
        let loopback = net("127.0.0.0/8");
        assert!(loopback.contains("127.1.2.3".parse().unwrap()));
        assert!(!loopback.contains("128.0.0.1".parse().unwrap()));
        assert!(!loopback.contains("::1".parse().unwrap()));
        // A dual-stack socket's view of an IPv4 peer.
        assert!(loopback.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(net("0.0.0.0/0").contains("203.0.113.9".parse().unwrap()));
        assert!(net("2001:db8::/32").contains("2001:db8:1::5".parse().unwrap()));
        assert!(!net("2001:db8::/32").contains("2001:db9::5".parse().unwrap()));
        assert!(net("192.0.2.1").contains("192.0.2.1".parse().unwrap()));
        assert!(!net("192.0.2.1").contains("192.0.2.2".parse().unwrap()));
    }

    #[test]
    fn refuses_what_is_no_network_naming_the_input() {
        for (input, reason) in [
            ("", "not an IPv4 or IPv6 address"),
            ("localhost", "not an IPv4 or IPv6 address"),
            ("192.0.2.0/", "the prefix length is not a number"),
            ("192.0.2.0/+24", "the prefix length is not a number"),
            (
                "192.0.2.0/33",
                "prefix /33 is longer than the 32 bits of the address",
            ),
            (
                "::/129",
                "prefix /129 is longer than the 128 bits of the address",
            ),
            ("192.0.2.0/1000", "the prefix length is not a number"),
            (
                "192.0.2.1/24",
                "host bits are set (the network is 192.0.2.0/24)",
            ),
        ] {
            let err = input.parse::<Network>().unwrap_err();
            assert_eq!(err.input, input);
            assert_eq!(err.reason, reason, "{input}");
            assert!(err.to_string().contains(reason));
        }
    }
}
