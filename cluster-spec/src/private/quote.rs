//! Quoting a value in an error message: whole when short, a window around the problem when
//! long, so no message grows with its input.
//!
//! Every crate of the workspace quotes user values through [`quote`]: a 100 MB device name or
//! hostlist gives a message of a few hundred bytes that still shows where the problem is.
//!
//! ```
//! use cluster_spec::__private::quote::quote;
//!
//! assert_eq!(quote("n[1-", 1), "\"n[1-\"");
//! let long = format!("{}!{}", "a".repeat(1000), "b".repeat(1000));
//! let q = quote(&long, 1000);
//! assert!(q.contains("a!b") && q.ends_with("…\" (2001 bytes)") && q.len() < 200);
//! ```

use std::fmt::Write as _;

/// Inputs longer than this are shown as a window around the problem, so that a hostlist of
/// thousands of nodes does not turn one error line into kilobytes.
pub const QUOTE_MAX: usize = 160;

/// Quotes `input` for an error message: escaped like a Rust string literal, and for long inputs
/// cut to a window around byte `pos` with `…` marking what was left out.
pub fn quote(input: &str, pos: usize) -> String {
    if input.len() <= QUOTE_MAX {
        return format!("{input:?}");
    }
    let (start, end) = window(input, pos);
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

/// `input` as it is when short, for values a message shows unquoted (a JSON list); for long
/// inputs the window [`quote`] would show, quoted the same way.
pub fn excerpt(input: &str, pos: usize) -> String {
    if input.len() <= QUOTE_MAX {
        input.to_owned()
    } else {
        quote(input, pos)
    }
}

/// The byte range of a long `input` that a message shows: `QUOTE_MAX` bytes around `pos`, on
/// character boundaries.
fn window(input: &str, pos: usize) -> (usize, usize) {
    let half = QUOTE_MAX / 2;
    let mut start = pos.saturating_sub(half).min(input.len());
    while !input.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = start.saturating_add(QUOTE_MAX).min(input.len());
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    (start, end)
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
}
