//! [`ParseError`]: why a Slurm hostlist does not parse, and at which byte.

use std::fmt;

use cluster_spec::__private::quote::{excerpt, quote};

/// A hostlist that breaks the grammar or passes a limit, from
/// [`hostlist::expand`](crate::hostlist::expand) and
/// [`HostList::parse`](crate::hostlist::HostList::parse).
///
/// The message quotes the input (shortened around `pos` when it is long) and names the byte:
/// `invalid hostlist "n[1-": unclosed '[' at byte 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseError {
    /// The whole hostlist.
    pub input: String,
    /// Byte offset of the problem in `input`; each [`ParseErrorKind`] says which byte.
    pub pos: usize,
    /// What is wrong there.
    pub kind: ParseErrorKind,
}

/// Why a hostlist does not parse; carried by [`ParseError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A `[` has no matching `]`; `pos` is the `[`.
    UnclosedBracket,
    /// A `]` has no matching `[`; `pos` is the `]`.
    UnmatchedBracket,
    /// A `[` inside a bracket group (groups do not nest); `pos` is the inner `[`.
    NestedBracket,
    /// An empty element in a bracket group, as in `n[]`, `n[1,]` or `n[,1]`; `pos` is where the
    /// missing range should start.
    EmptyRange,
    /// A character the bracket grammar does not allow there (`n[a]`, `n[1-2-3]`); `pos` is
    /// that character.
    UnexpectedChar {
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead.
        found: char,
    },
    /// A number in a bracket group does not fit in 64 bits; `pos` is its first digit.
    NumberOverflow,
    /// A range whose upper bound is below its lower bound (`n[5-3]`; Slurm rejects these
    /// too); `pos` is its first digit.
    DescendingRange {
        /// The range as written, e.g. `5-3`.
        range: String,
    },
    /// The hostlist names more hosts than `hostlist::MAX_HOSTS`; `pos` is the name or bracket
    /// group that passed the limit.
    TooManyHosts {
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },
    /// The host names add up to more than `hostlist::MAX_BYTES` bytes; `pos` is the name or
    /// bracket group that passed the limit.
    TooLarge {
        /// The limit, `hostlist::MAX_BYTES`.
        max: usize,
    },
}

impl ParseError {
    /// The error `kind` at byte `pos` of `input`.
    pub(crate) fn new(input: &str, pos: usize, kind: ParseErrorKind) -> Self {
        Self {
            input: input.to_owned(),
            pos,
            kind,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pos = self.pos;
        write!(f, "invalid hostlist {}: ", quote(&self.input, pos))?;
        match &self.kind {
            ParseErrorKind::UnclosedBracket => write!(f, "unclosed '[' at byte {pos}"),
            ParseErrorKind::UnmatchedBracket => write!(f, "unmatched ']' at byte {pos}"),
            ParseErrorKind::NestedBracket => write!(f, "nested '[' at byte {pos}"),
            ParseErrorKind::EmptyRange => write!(f, "empty range at byte {pos}"),
            ParseErrorKind::UnexpectedChar { expected, found } => {
                write!(f, "expected {expected} at byte {pos}, found {found:?}")
            }
            ParseErrorKind::NumberOverflow => {
                write!(f, "number at byte {pos} does not fit in 64 bits")
            }
            ParseErrorKind::DescendingRange { range } => {
                write!(f, "descending range '{}' at byte {pos}", excerpt(range, 0))
            }
            ParseErrorKind::TooManyHosts { max } => write!(
                f,
                "expands to more than {max} hosts (limit passed at byte {pos})"
            ),
            ParseErrorKind::TooLarge { max } => write!(
                f,
                "expands to more than {max} bytes of host names (limit passed at byte {pos})"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_input_and_byte() {
        let e = ParseError::new("n[1-", 1, ParseErrorKind::UnclosedBracket);
        assert_eq!(
            e.to_string(),
            "invalid hostlist \"n[1-\": unclosed '[' at byte 1"
        );
    }
}
