//! The crate's single error type.

use std::fmt::Write as _;

/// Everything that can go wrong in this crate.
///
/// Every variant quotes the offending input (shortened around the problem when it is long) and,
/// where a position is meaningful, the byte offset into that input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- Shared by every resolver ----
    /// A cluster spec built from the source is invalid, or a lookup in it failed.
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// A required environment variable is not set.
    #[error("environment variable {name} is not set")]
    MissingVariable {
        /// The variable.
        name: String,
    },
    /// An environment variable holds a value the resolver cannot use.
    #[error("environment variable {name}={value:?} is invalid: {reason}")]
    InvalidVariable {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    // ---- Slurm hostlists (`hostlist::expand`, `hostlist::HostList::parse`) ----
    /// A `[` in a hostlist has no matching `]`.
    #[error("invalid hostlist {}: unclosed '[' at byte {pos}", quote(.input, *.pos))]
    HostlistUnclosedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the `[`.
        pos: usize,
    },
    /// A `]` in a hostlist has no matching `[`.
    #[error("invalid hostlist {}: unmatched ']' at byte {pos}", quote(.input, *.pos))]
    HostlistUnmatchedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the `]`.
        pos: usize,
    },
    /// A `[` inside a bracket group; groups do not nest.
    #[error("invalid hostlist {}: nested '[' at byte {pos}", quote(.input, *.pos))]
    HostlistNestedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the inner `[`.
        pos: usize,
    },
    /// An empty element in a bracket group, as in `n[]`, `n[1,]` or `n[,1]`.
    #[error("invalid hostlist {}: empty range at byte {pos}", quote(.input, *.pos))]
    HostlistEmptyRange {
        /// The whole hostlist.
        input: String,
        /// Byte offset where the missing range should start.
        pos: usize,
    },
    /// A character that the bracket grammar does not allow at that point (`n[a]`, `n[1-2-3]`).
    #[error(
        "invalid hostlist {}: expected {expected} at byte {pos}, found {found:?}",
        quote(.input, *.pos)
    )]
    HostlistUnexpectedChar {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the unexpected character.
        pos: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead.
        found: char,
    },
    /// A number in a bracket group does not fit in 64 bits.
    #[error(
        "invalid hostlist {}: number at byte {pos} does not fit in 64 bits",
        quote(.input, *.pos)
    )]
    HostlistNumberOverflow {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the number's first digit.
        pos: usize,
    },
    /// A range whose upper bound is below its lower bound (`n[5-3]`); Slurm rejects these too.
    #[error(
        "invalid hostlist {}: descending range '{range}' at byte {pos}",
        quote(.input, *.pos)
    )]
    HostlistDescendingRange {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the range's first digit.
        pos: usize,
        /// The range as written, e.g. `5-3`.
        range: String,
    },
    /// The hostlist names more hosts than `hostlist::MAX_HOSTS`.
    #[error(
        "invalid hostlist {}: expands to more than {max} hosts (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    HostlistTooManyHosts {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the name or bracket group that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },
    /// The host names of the hostlist add up to more than `hostlist::MAX_BYTES` bytes.
    #[error(
        "invalid hostlist {}: expands to more than {max} bytes of host names (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    HostlistTooLarge {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the name or bracket group that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_BYTES`.
        max: usize,
    },

    // ---- SLURM_STEP_TASKS_PER_NODE (`hostlist::expand_tasks_per_node`) ----
    /// A tasks-per-node list that does not follow `N` / `N(xK)`, comma separated.
    #[error(
        "invalid tasks-per-node list {}: expected {expected} at byte {pos}, found {}",
        quote(.input, *.pos),
        describe(*.found)
    )]
    TasksPerNodeSyntax {
        /// The whole list.
        input: String,
        /// Byte offset of the problem.
        pos: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead; `None` at the end of the input.
        found: Option<char>,
    },
    /// A count in a tasks-per-node list does not fit in 32 bits.
    #[error(
        "invalid tasks-per-node list {}: number at byte {pos} does not fit in 32 bits",
        quote(.input, *.pos)
    )]
    TasksPerNodeOverflow {
        /// The whole list.
        input: String,
        /// Byte offset of the number's first digit.
        pos: usize,
    },
    /// A tasks-per-node list that names more nodes than `hostlist::MAX_HOSTS`.
    #[error(
        "invalid tasks-per-node list {}: expands to more than {max} nodes (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    TasksPerNodeTooMany {
        /// The whole list.
        input: String,
        /// Byte offset of the element that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },
}

/// Inputs longer than this are shown as a window around the problem, so that a hostlist of
/// thousands of nodes does not turn one error line into kilobytes.
const QUOTE_MAX: usize = 160;

/// Quotes `input` for an error message: escaped like a Rust string literal, and for long inputs
/// cut to a window around byte `pos` with `…` marking what was left out.
fn quote(input: &str, pos: usize) -> String {
    if input.len() <= QUOTE_MAX {
        return format!("{input:?}");
    }
    let half = QUOTE_MAX / 2;
    let mut start = pos.saturating_sub(half).min(input.len());
    while !input.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = start.saturating_add(QUOTE_MAX).min(input.len());
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(QUOTE_MAX + 32);
    out.push('"');
    if start > 0 {
        out.push('…');
    }
    out.extend(input[start..end].escape_debug());
    if end < input.len() {
        out.push('…');
    }
    // Writing to a String cannot fail.
    let _ = write!(out, "\" ({} bytes)", input.len());
    out
}

/// `'c'` for a character, `end of input` for none.
fn describe(found: Option<char>) -> String {
    match found {
        Some(c) => format!("{c:?}"),
        None => "end of input".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inputs_are_quoted_whole_and_escaped() {
        assert_eq!(quote("n[1-", 1), "\"n[1-\"");
        assert_eq!(quote("a\tb\n", 0), "\"a\\tb\\n\"");
    }

    #[test]
    fn long_inputs_are_windowed_around_the_position() {
        let input = format!("{}[{}", "a".repeat(500), "b".repeat(500));
        let q = quote(&input, 500);
        assert!(q.starts_with("\"…a"), "{q}");
        assert!(q.contains("a[b"), "{q}");
        assert!(q.ends_with("b…\" (1001 bytes)"), "{q}");
        assert!(q.len() < QUOTE_MAX + 40);
    }

    #[test]
    fn windows_respect_char_boundaries() {
        let input = "é".repeat(300);
        for pos in 0..=input.len() + 3 {
            let _ = quote(&input, pos);
        }
    }

    #[test]
    fn message_names_input_and_byte() {
        let e = Error::HostlistUnclosedBracket {
            input: "n[1-".to_owned(),
            pos: 1,
        };
        assert_eq!(
            e.to_string(),
            "invalid hostlist \"n[1-\": unclosed '[' at byte 1"
        );
        let e = Error::TasksPerNodeSyntax {
            input: "2(x3".to_owned(),
            pos: 4,
            expected: "')'",
            found: None,
        };
        assert_eq!(
            e.to_string(),
            "invalid tasks-per-node list \"2(x3\": expected ')' at byte 4, found end of input"
        );
    }
}
