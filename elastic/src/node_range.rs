//! [`NodeRange`]: how many nodes a round may have (`--nodes 2:4`, or `3` for exactly 3).

use std::fmt;
use std::str::FromStr;

pub use crate::error::nodes::{NodesError, NodesErrorKind};

/// The most nodes one job's round may have: a round is one message to every member, and a
/// node list this long is already a large TensorFlow cluster.
pub const MAX_NODES: u32 = 4096;

/// The node counts a round may have, `min..=max`, with `1 <= min <= max <= MAX_NODES`.
///
/// ```
/// use elastic::NodeRange;
///
/// let range: NodeRange = "2:4".parse()?;
/// assert_eq!((range.min(), range.max()), (2, 4));
/// assert_eq!("3".parse::<NodeRange>()?, NodeRange::new(3, 3)?);
/// assert_eq!(range.to_string(), "2:4");
/// assert_eq!(
///     "4:2".parse::<NodeRange>().unwrap_err().to_string(),
///     "invalid node range \"4:2\": the minimum 4 is above the maximum 2"
/// );
/// # Ok::<(), elastic::NodesError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRange {
    min: u32,
    max: u32,
}

impl NodeRange {
    /// The range `min..=max`, checked as the parser checks it.
    pub fn new(min: u32, max: u32) -> Result<Self, NodesError> {
        Self::checked(min, max, &format!("{min}:{max}"))
    }

    /// The fewest nodes a round may have.
    pub fn min(&self) -> u32 {
        self.min
    }

    /// The most nodes a round may have.
    pub fn max(&self) -> u32 {
        self.max
    }

    fn checked(min: u32, max: u32, input: &str) -> Result<Self, NodesError> {
        let fail = |kind| NodesError {
            input: input.to_owned(),
            pos: 0,
            kind,
        };
        if min == 0 {
            return Err(fail(NodesErrorKind::ZeroMin));
        }
        if min > max {
            return Err(fail(NodesErrorKind::MinAboveMax { min, max }));
        }
        if max > MAX_NODES {
            return Err(fail(NodesErrorKind::AboveLimit {
                max,
                limit: MAX_NODES,
            }));
        }
        Ok(Self { min, max })
    }
}

impl FromStr for NodeRange {
    type Err = NodesError;

    /// `MIN:MAX`, or `N` for `N:N`; decimal numbers, no spaces or signs.
    fn from_str(input: &str) -> Result<Self, NodesError> {
        let (min, rest) = number(input, 0)?;
        let max = match input.as_bytes().get(rest) {
            None => min,
            Some(b':') => {
                let (max, end) = number(input, rest + 1)?;
                if end != input.len() {
                    return Err(not_a_number(input, end));
                }
                max
            }
            Some(_) => return Err(not_a_number(input, rest)),
        };
        Self::checked(min, max, input)
    }
}

/// The decimal number starting at byte `start` of `input`, and the byte after it.
fn number(input: &str, start: usize) -> Result<(u32, usize), NodesError> {
    let digits = input.as_bytes()[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        return Err(not_a_number(input, start));
    }
    let end = start + digits;
    let value = input[start..end].parse().map_err(|_| NodesError {
        input: input.to_owned(),
        pos: start,
        kind: NodesErrorKind::Overflow { pos: start },
    })?;
    Ok((value, end))
}

fn not_a_number(input: &str, pos: usize) -> NodesError {
    NodesError {
        input: input.to_owned(),
        pos,
        kind: NodesErrorKind::NotANumber {
            pos,
            found: input[pos..].chars().next(),
        },
    }
}

impl fmt::Display for NodeRange {
    /// `MIN:MAX`, which parses back to the same range.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(input: &str) -> String {
        input.parse::<NodeRange>().unwrap_err().to_string()
    }

    #[test]
    fn forms() {
        assert_eq!(
            "1:64".parse::<NodeRange>().unwrap(),
            NodeRange::new(1, 64).unwrap()
        );
        assert_eq!(
            "7".parse::<NodeRange>().unwrap(),
            NodeRange::new(7, 7).unwrap()
        );
    }

    #[test]
    fn errors_name_the_value_and_byte() {
        assert_eq!(
            err(""),
            "invalid node range \"\": expected a whole number at byte 0 (MIN:MAX or N, e.g. \
             2:4), found end of input"
        );
        assert_eq!(
            err("2:x"),
            "invalid node range \"2:x\": expected a whole number at byte 2 (MIN:MAX or N, e.g. \
             2:4), found 'x'"
        );
        assert_eq!(
            err("2-4"),
            "invalid node range \"2-4\": expected a whole number at byte 1 (MIN:MAX or N, e.g. \
             2:4), found '-'"
        );
        assert_eq!(
            err("2:4:6"),
            "invalid node range \"2:4:6\": expected a whole number at byte 3 (MIN:MAX or N, \
             e.g. 2:4), found ':'"
        );
        assert_eq!(
            err("0:4"),
            "invalid node range \"0:4\": the minimum must be at least 1 node"
        );
        assert_eq!(
            err("1:99999999999"),
            "invalid node range \"1:99999999999\": the number at byte 2 does not fit in 32 bits"
        );
        assert_eq!(
            err("1:5000"),
            "invalid node range \"1:5000\": the maximum 5000 is above the limit of 4096 nodes"
        );
    }

    proptest! {
        #[test]
        fn display_round_trips(min in 1u32..=MAX_NODES, extra in 0u32..=MAX_NODES) {
            let max = min.saturating_add(extra).min(MAX_NODES);
            let range = NodeRange::new(min, max).unwrap();
            prop_assert_eq!(range.to_string().parse::<NodeRange>().unwrap(), range);
        }

        #[test]
        fn any_input_parses_or_names_a_byte_inside_it(input in "[0-9:x ]{0,12}|\\PC{0,12}") {
            match input.parse::<NodeRange>() {
                Ok(range) => {
                    prop_assert!(1 <= range.min() && range.min() <= range.max());
                    prop_assert!(range.max() <= MAX_NODES);
                }
                Err(e) => {
                    prop_assert!(e.pos <= input.len());
                    prop_assert_eq!(&e.input, &input);
                }
            }
        }
    }
}
