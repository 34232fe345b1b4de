//! [`NodesError`]: why a node range (`--nodes 2:4`) does not parse, and at which byte.

use cluster_spec::__private::quote::quote;

/// A node range that is not `MIN:MAX` or `N`, or whose bounds make no job, from
/// [`NodeRange`](crate::NodeRange)'s `FromStr` and [`NodeRange::new`](crate::NodeRange::new).
///
/// The message quotes the input: `invalid node range "4:2": the minimum 4 is above the
/// maximum 2`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid node range {}: {kind}", quote(.input, *.pos))]
#[non_exhaustive]
pub struct NodesError {
    /// The whole range as given (`"4:2"`; `"MIN:MAX"` written out for [`NodeRange::new`]).
    ///
    /// [`NodeRange::new`]: crate::NodeRange::new
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub pos: usize,
    /// What is wrong there.
    pub kind: NodesErrorKind,
}

/// Why a node range is invalid; carried by [`NodesError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodesErrorKind {
    /// A bound is not a decimal number.
    #[error("expected a whole number at byte {pos} (MIN:MAX or N, e.g. 2:4), found {}",
        found.map_or_else(|| "end of input".to_owned(), |c| format!("{c:?}")))]
    NotANumber {
        /// Where the number should start or where it breaks.
        pos: usize,
        /// The character found there; `None` at the end of the input.
        found: Option<char>,
    },
    /// A bound does not fit in 32 bits.
    #[error("the number at byte {pos} does not fit in 32 bits")]
    Overflow {
        /// Its first digit.
        pos: usize,
    },
    /// The minimum is 0: a round needs a node.
    #[error("the minimum must be at least 1 node")]
    ZeroMin,
    /// The minimum is above the maximum.
    #[error("the minimum {min} is above the maximum {max}")]
    MinAboveMax {
        /// The minimum given.
        min: u32,
        /// The maximum given.
        max: u32,
    },
    /// The maximum is above what one rendezvous serves.
    #[error("the maximum {max} is above the limit of {limit} nodes")]
    AboveLimit {
        /// The maximum given.
        max: u32,
        /// [`MAX_NODES`](crate::MAX_NODES).
        limit: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_quotes_input() {
        let e = NodesError {
            input: "4:2".into(),
            pos: 0,
            kind: NodesErrorKind::MinAboveMax { min: 4, max: 2 },
        };
        assert_eq!(
            e.to_string(),
            "invalid node range \"4:2\": the minimum 4 is above the maximum 2"
        );
    }
}
