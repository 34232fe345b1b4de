//! The job-name rule, `[A-Za-z][A-Za-z0-9_]*`, with the byte where a name breaks it.
//!
//! TensorFlow's device-name grammar names jobs (and device types) this way, and its C++ runtime
//! aborts a server whose cluster holds any other name. [`ClusterSpec`](crate::ClusterSpec)
//! checks every job name with [`check`]; `device-filter` checks names inside device strings
//! (`/job:worker/task:0`) with [`scan`], so the rule is written once.
//!
//! ```
//! use cluster_spec::job_name::{self, Violation};
//!
//! assert_eq!(job_name::check("worker_1"), Ok(()));
//! assert_eq!(job_name::check("1w"), Err(Violation::Start { found: Some('1') }));
//! assert_eq!(job_name::check("wor-ker").map_err(|v| v.position()), Err(3));
//! // Inside a device string the name runs to the next '/'.
//! assert_eq!(job_name::scan("worker/task:0", b"/"), Ok(6));
//! ```

/// Where and why a name breaks `[A-Za-z][A-Za-z0-9_]*`.
///
/// Exhaustive on purpose: the rule has two parts, and callers that word their own messages
/// (device-filter's) match both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// The name does not start with a letter (byte 0).
    Start {
        /// The character found instead, `None` when the name is empty.
        found: Option<char>,
    },
    /// A character other than a letter, digit or `_` follows the first letter.
    Char {
        /// Its byte offset in the name (a character boundary: every byte before it is ASCII).
        at: usize,
        /// The whole character.
        found: char,
    },
}

impl Violation {
    /// The byte offset the violation is at: 0 for [`Violation::Start`].
    pub fn position(&self) -> usize {
        match *self {
            Self::Start { .. } => 0,
            Self::Char { at, .. } => at,
        }
    }
}

/// Checks all of `name` against the rule.
pub fn check(name: &str) -> Result<(), Violation> {
    scan(name, b"").map(|_| ())
}

/// Checks the name at the start of `s`, which runs to the first byte in `terminators` (or the
/// end), and returns its length in bytes. Offsets in a [`Violation`] are relative to `s`.
pub fn scan(s: &str, terminators: &[u8]) -> Result<usize, Violation> {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(b) if b.is_ascii_alphabetic() => {}
        _ => {
            return Err(Violation::Start {
                found: s.chars().next(),
            });
        }
    }
    let end = if terminators.is_empty() {
        bytes.len()
    } else {
        bytes
            .iter()
            .position(|b| terminators.contains(b))
            .unwrap_or(bytes.len())
    };
    match bytes[..end]
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
    {
        // Every byte before `at` is ASCII, so `at` starts a character.
        Some(at) => Err(Violation::Char {
            at,
            found: s[at..].chars().next().unwrap_or('\u{fffd}'),
        }),
        None => Ok(end),
    }
}

/// The byte an error message about `name` windows around: the violation's position, or 0 for
/// a valid name.
pub fn problem_at(name: &str) -> usize {
    check(name).err().map_or(0, |v| v.position())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["worker", "ps", "w", "Worker_2", "a_b_c9"] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert_eq!(check(""), Err(Violation::Start { found: None }));
        assert_eq!(check("_w"), Err(Violation::Start { found: Some('_') }));
        assert_eq!(check("wörker"), Err(Violation::Char { at: 1, found: 'ö' }));
        assert_eq!(check("w:1"), Err(Violation::Char { at: 1, found: ':' }));
    }

    #[test]
    fn scan_stops_at_a_terminator() {
        assert_eq!(scan("GPU:0", b"/:"), Ok(3));
        assert_eq!(
            scan("foo-bar/x", b"/"),
            Err(Violation::Char { at: 3, found: '-' })
        );
        assert_eq!(scan("/x", b"/"), Err(Violation::Start { found: Some('/') }));
    }
}
