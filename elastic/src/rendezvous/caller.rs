//! Whom a join's share of the job slots is counted for: its caller's IPv4 address, or an
//! IPv6 caller's /64. One host, or one customer of a provider, is usually handed a whole /64
//! and may send from any address in it: counted per address, it would have 2^64 shares and
//! fill every slot alone.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A caller as its job share counts it (see the module's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Caller(IpAddr);

impl Caller {
    /// The caller at `ip` (an IPv4-mapped IPv6 address is its IPv4 one).
    pub(crate) fn of(ip: IpAddr) -> Self {
        Self(match ip.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
            v4 => v4,
        })
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Caller;

    #[test]
    fn ipv6_callers_are_their_slash_64_and_ipv4_ones_their_address() {
        let of = |ip: &str| Caller::of(ip.parse().unwrap());
        assert_eq!(of("2001:db8:1:2::1"), of("2001:db8:1:2:ffff:1:2:3"));
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
        assert_eq!(of("2001:db8:1:2:ab::1").to_string(), "2001:db8:1:2::/64");
        assert_ne!(of("192.0.2.1"), of("192.0.2.2"));
        assert_eq!(of("::ffff:192.0.2.1"), of("192.0.2.1"));
        assert_eq!(of("192.0.2.1").to_string(), "192.0.2.1");
    }
}
