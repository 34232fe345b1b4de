//! Which hosts are one: the "address held" check compares hosts by a canonical form, so that
//! aliases of one host cannot hold one port twice. IP literals compare as addresses
//! (`::1` and `0:0:0:0:0:0:0:1`, `[::1]`, an IPv4-mapped IPv6 address and its IPv4 one);
//! names without case and without a trailing dot; `localhost` and its usual aliases
//! (`localhost.localdomain`, `ip6-localhost`, `ip6-loopback`) as the loopback address,
//! `127.0.0.1` and `::1` alike (an agent's tasks bind every interface, both families).
//!
//! A host of digits and dots that is no IPv4 address as Rust (and TensorFlow's gRPC) reads
//! it — `127.000.0.9`, `127.1`, `0x7f.1` is a name — is refused at the join rather than
//! guessed at: `inet_aton` reads leading zeros as octal and fills in missing parts, other
//! resolvers read them as decimal or as a name, so the tasks' peers could reach another host
//! than the one the rendezvous compared.

use std::net::IpAddr;

/// The form two hosts compare by: equal forms are one host.
pub(super) fn canonical_host(host: &str) -> String {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(&host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        let ip = ip.to_canonical();
        return if ip.is_loopback() && (ip == IpAddr::from([127, 0, 0, 1]) || ip.is_ipv6()) {
            "localhost".to_owned()
        } else {
            ip.to_string()
        };
    }
    match bare {
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback" => {
            "localhost".to_owned()
        }
        _ => bare.to_owned(),
    }
}

/// Why `host` is refused, when it is all digits and dots but no IPv4 address as written.
pub(super) fn ambiguous_ipv4(host: &str) -> Option<String> {
    let bare = host.strip_suffix('.').unwrap_or(host);
    let numeric = !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    (numeric && bare.parse::<std::net::Ipv4Addr>().is_err()).then(|| {
        format!(
            "host {host:?} is no IPv4 address as written (leading zeros, or fewer or more than \
             four parts, which inet_aton reads as octal or fills in and other resolvers do not): \
             write it as four decimal numbers without leading zeros, e.g. 127.0.0.9"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_of_one_host_are_one() {
        for (a, b) in [
            ("localhost", "127.0.0.1"),
            ("LocalHost.", "::1"),
            ("localhost.localdomain", "[::1]"),
            ("ip6-localhost", "0:0:0:0:0:0:0:1"),
            ("::ffff:10.0.0.1", "10.0.0.1"),
            ("Node-1.Example.", "node-1.example"),
        ] {
            assert_eq!(canonical_host(a), canonical_host(b), "{a} vs {b}");
        }
        assert_ne!(canonical_host("127.0.0.9"), canonical_host("127.0.0.1"));
        assert_ne!(canonical_host("a"), canonical_host("b"));
    }

    #[test]
    fn numeric_hosts_that_are_no_ipv4_address_are_refused() {
        for host in ["127.000.0.9", "127.1", "1.2.3.4.5", "010.0.0.1"] {
            assert!(ambiguous_ipv4(host).is_some(), "{host}");
        }
        for host in ["127.0.0.9", "127.0.0.9.", "h1", "10.0.0.1", "0x7f.1", "::1"] {
            assert_eq!(ambiguous_ipv4(host), None, "{host}");
        }
        assert_eq!(
            ambiguous_ipv4("127.000.0.9").unwrap(),
            "host \"127.000.0.9\" is no IPv4 address as written (leading zeros, or fewer or \
             more than four parts, which inet_aton reads as octal or fills in and other \
             resolvers do not): write it as four decimal numbers without leading zeros, e.g. \
             127.0.0.9"
        );
    }
}
