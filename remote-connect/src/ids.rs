//! Random non-zero 64-bit identifiers: context ids and device incarnations, and how logs and
//! messages show them.
//!
//! TensorFlow draws both from a random source and treats 0 as "unset" (a context id of 0 is
//! refused, an incarnation of 0 means "unknown"), so 0 is never returned.

/// A random non-zero `u64` from the operating system's generator.
pub(crate) fn random_nonzero_u64() -> u64 {
    loop {
        // The OS generator failing is not something a caller can handle; fall back to a
        // time-and-address mix, which is still unique enough for ids.
        let n = getrandom::u64().unwrap_or_else(|_| fallback());
        if n != 0 {
            return n;
        }
    }
}

fn fallback() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    nanos ^ (std::ptr::addr_of!(local) as u64).rotate_left(32)
}

/// An id as messages and logs show it, `0x` and 16 hex digits (`0x00c0ffee00c0ffee`), so a
/// context id in a log line matches the one in an error.
pub(crate) struct Hex(pub(crate) u64);

impl std::fmt::Display for Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_nonzero_and_distinct() {
        let ids: std::collections::HashSet<u64> = (0..1000).map(|_| random_nonzero_u64()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(!ids.contains(&0));
    }
}
