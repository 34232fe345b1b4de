//! What a valid job name and a valid task address look like.
//!
//! Job names follow TensorFlow's device-name grammar `[A-Za-z][A-Za-z0-9_]*` ([`job_name`]), the
//! one the C++ runtime enforces (a name outside it aborts a TensorFlow server). Addresses are `host:port`:
//! a host name or IPv4 address of `[A-Za-z0-9._-]`, or an IPv6 address in brackets (with an
//! optional `%zone`), then a decimal port from 0 to 65535.
//!
//! [`scan_address`] is written as one table-driven pass over the bytes because it runs once
//! per task on the JSON hot path: it stops at the first byte that cannot continue an address,
//! so the JSON reader can validate a string and find its closing quote in the same loop.

use std::fmt;
use std::net::Ipv6Addr;

use crate::job_name::{self, Violation};

/// Byte classes, one table lookup per byte.
const HOST: u8 = 1;
const DIGIT: u8 = 2;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'-' || c == b'_' {
            t[b] = HOST;
        }
        if c.is_ascii_digit() {
            t[b] |= DIGIT;
        }
        b += 1;
    }
    t
};

/// Why a job name is invalid ([`job_name`]'s rule), or `None` if it is valid.
pub(crate) fn job_name_problem(name: &str) -> Option<String> {
    match job_name::check(name).err()? {
        Violation::Start { found: None } => Some("job names must not be empty".into()),
        Violation::Start { found: Some(c) } => {
            Some(format!("job names must start with a letter, not {c:?}"))
        }
        Violation::Char { at, found } => Some(format!(
            "job names may hold only letters, digits and '_', not {found:?} (at byte {at})"
        )),
    }
}

/// What is wrong with an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressProblem {
    Empty,
    EmptyHost,
    NoPort,
    BadHostChar(u8),
    BadIpv6,
    BadPort,
    PortRange,
    ExtraColon,
    Trailing(u8),
}

impl fmt::Display for AddressProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("an address must be host:port, not empty"),
            Self::EmptyHost => f.write_str("the host before ':' is empty"),
            Self::NoPort => f.write_str("no port: an address must be host:port"),
            Self::BadHostChar(b) => write!(
                f,
                "{} is not allowed in a host name (letters, digits, '.', '-', '_'; IPv6 in brackets)",
                show_byte(*b)
            ),
            Self::BadIpv6 => f.write_str("the bracketed host is not an IPv6 address"),
            Self::BadPort => f.write_str("the port must be a decimal number"),
            Self::PortRange => f.write_str("the port must be from 0 to 65535"),
            Self::ExtraColon => {
                f.write_str("more than one ':' (an IPv6 host goes in brackets: [::1]:8470)")
            }
            Self::Trailing(b) => write!(f, "unexpected {} after the port", show_byte(*b)),
        }
    }
}

fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() || b == b' ' {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Scans an address at the start of `s`, stopping at the first byte that cannot continue it.
///
/// Returns the address length. The caller decides whether the stop byte is acceptable (end of
/// input for a plain string, a closing quote in JSON); a stop byte other than those is reported
/// with [`trailing_problem`].
#[inline]
pub(crate) fn scan_address(s: &[u8]) -> Result<usize, AddressProblem> {
    let mut i = if s.first() == Some(&b'[') {
        scan_ipv6(s)?
    } else {
        host_run(s)
    };
    if i == 0 {
        return Err(match s.first() {
            None | Some(b'"') => AddressProblem::Empty,
            Some(b':') => AddressProblem::EmptyHost,
            Some(&b) => AddressProblem::BadHostChar(b),
        });
    }
    match s.get(i) {
        Some(b':') => {}
        None | Some(b'"') => return Err(AddressProblem::NoPort),
        Some(&b) => return Err(AddressProblem::BadHostChar(b)),
    }
    i += 1;
    let digits = i;
    let mut port: u32 = 0;
    while i < s.len() && CLASS[s[i] as usize] & DIGIT != 0 {
        port = port * 10 + u32::from(s[i] - b'0');
        if port > 65535 {
            return Err(AddressProblem::PortRange);
        }
        i += 1;
    }
    if i == digits {
        return Err(match s.get(i) {
            Some(b':') => AddressProblem::ExtraColon,
            _ => AddressProblem::BadPort,
        });
    }
    Ok(i)
}

/// The length of the run of host-name bytes at the start of `s`.
#[inline]
fn host_run(s: &[u8]) -> usize {
    // Eight bytes per step with one branch: host names are long and the per-byte loop's
    // branches dominated the JSON reader's profile.
    let mut i = 0;
    while let Some(chunk) = s.get(i..i + 8) {
        let all = chunk.iter().fold(HOST, |acc, &b| acc & CLASS[b as usize]);
        if all == 0 {
            break;
        }
        i += 8;
    }
    while i < s.len() && CLASS[s[i] as usize] & HOST != 0 {
        i += 1;
    }
    i
}

/// Describes the byte an address scan stopped at, when that byte may not end an address.
pub(crate) fn trailing_problem(stop: u8) -> AddressProblem {
    match stop {
        b':' => AddressProblem::ExtraColon,
        // A host character right after the port: "h:80x".
        _ if CLASS[stop as usize] & HOST != 0 => AddressProblem::BadPort,
        _ => AddressProblem::Trailing(stop),
    }
}

/// `[v6addr]` or `[v6addr%zone]`; returns the index just past `]`.
#[cold]
fn scan_ipv6(s: &[u8]) -> Result<usize, AddressProblem> {
    let close = s
        .iter()
        .position(|&b| b == b']' || b == b'"')
        .filter(|&p| s[p] == b']')
        .ok_or(AddressProblem::BadIpv6)?;
    let inner = std::str::from_utf8(&s[1..close]).map_err(|_| AddressProblem::BadIpv6)?;
    let (addr, zone) = match inner.split_once('%') {
        Some((addr, zone)) => (addr, Some(zone)),
        None => (inner, None),
    };
    let zone_ok =
        zone.is_none_or(|z| !z.is_empty() && z.bytes().all(|b| CLASS[b as usize] & HOST != 0));
    if addr.parse::<Ipv6Addr>().is_err() || !zone_ok {
        return Err(AddressProblem::BadIpv6);
    }
    Ok(close + 1)
}

/// Checks a whole string as an address.
pub(crate) fn address_problem(address: &str) -> Option<AddressProblem> {
    let bytes = address.as_bytes();
    match scan_address(bytes) {
        Ok(end) if end == bytes.len() => None,
        Ok(end) => Some(trailing_problem(bytes[end])),
        Err(problem) => Some(problem),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names() {
        for ok in ["worker", "ps", "w", "Worker_2", "a_b_c9"] {
            assert_eq!(job_name_problem(ok), None, "{ok}");
        }
        for bad in ["", "1w", "_w", "wor-ker", "wörker", "w:1", "w/x", " w"] {
            assert!(job_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn addresses() {
        for ok in [
            "localhost:0",
            "a:1",
            "10.0.0.1:65535",
            "host1-42.example.com:2042",
            "my_host:8080",
            "[::1]:80",
            "[fe80::1%eth0]:2222",
            "h:08080",
        ] {
            assert_eq!(address_problem(ok), None, "{ok}");
        }
        let cases = [
            ("", AddressProblem::Empty),
            ("localhost", AddressProblem::NoPort),
            (":80", AddressProblem::EmptyHost),
            ("h:", AddressProblem::BadPort),
            ("h:65536", AddressProblem::PortRange),
            ("h:99999999999999", AddressProblem::PortRange),
            ("h:-1", AddressProblem::BadPort),
            ("h:80x", AddressProblem::BadPort),
            ("h:1:2", AddressProblem::ExtraColon),
            ("::1:80", AddressProblem::EmptyHost),
            ("fe80::1:80", AddressProblem::ExtraColon),
            ("/bns/a/b:1", AddressProblem::BadHostChar(b'/')),
            ("grpc://h:1", AddressProblem::BadPort),
            ("h o:1", AddressProblem::BadHostChar(b' ')),
            ("[zz]:1", AddressProblem::BadIpv6),
            ("[::1:80", AddressProblem::BadIpv6),
            ("[::1]", AddressProblem::NoPort),
            ("h:1 ", AddressProblem::Trailing(b' ')),
        ];
        for (bad, problem) in cases {
            assert_eq!(address_problem(bad), Some(problem), "{bad}");
        }
    }
}
