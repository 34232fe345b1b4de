//! The hostlist grammar: text to [`HostList`], with the size limits checked up front.
//!
//! ```text
//! hostlist := SEP* ( pattern ( SEP+ pattern )* )? SEP*     SEP := ',' | ASCII whitespace
//! pattern  := ( LITERAL | '[' group ']' )+                 LITERAL := any char but SEP, '[', ']'
//! group    := range ( ',' range )*
//! range    := DIGITS ( '-' DIGITS )?                       lo <= hi < 2^64
//! ```

use super::digits::padded_len_sum;
use super::host_list::HostList;
use super::layout::{Group, NumRange, Pattern, Ranges, Span};
use super::{MAX_BYTES, MAX_HOSTS};
use super::{ParseError, ParseErrorKind};

/// Separators between names: `,` and ASCII whitespace. Slurm 22.05 separates on `,`, space and
/// tab only, so a newline or CR becomes part of a name there (`"n1\n"` is a host `n1\n`); no
/// host name contains whitespace, so here it always separates.
fn is_separator(b: u8) -> bool {
    b == b',' || b.is_ascii_whitespace()
}

pub(super) fn parse(input: &str) -> Result<HostList, ParseError> {
    let capacity = Capacity::of(input.as_bytes());
    let mut p = Parser {
        input,
        bytes: input.as_bytes(),
        i: 0,
        pattern_start: 0,
        groups: Vec::with_capacity(capacity.groups),
        ranges: Vec::with_capacity(capacity.ranges),
    };
    let mut patterns = Vec::with_capacity(capacity.patterns);
    let mut hosts: usize = 0;
    let mut bytes: u128 = 0;
    loop {
        while p.i < p.bytes.len() && is_separator(p.bytes[p.i]) {
            p.i += 1;
        }
        if p.i == p.bytes.len() {
            break;
        }
        let at = p.i;
        let (mut pattern, pattern_bytes) = p.pattern()?;
        hosts += pattern.len as usize;
        if hosts > MAX_HOSTS {
            return Err(p.error(at, ParseErrorKind::TooManyHosts { max: MAX_HOSTS }));
        }
        // `hosts` is at most MAX_HOSTS, far below u32::MAX.
        pattern.start = (hosts - pattern.len as usize) as u32;
        bytes += pattern_bytes;
        if bytes > MAX_BYTES as u128 {
            return Err(p.too_large(at));
        }
        patterns.push(pattern);
    }
    Ok(HostList {
        source: input.into(),
        patterns,
        groups: p.groups,
        ranges: p.ranges,
        len: hosts,
    })
}

/// How many patterns, groups and ranges a hostlist can hold at most, counted in one pass over
/// the bytes so that each array is allocated once at its final size: growing by doubling would
/// hold up to three times the array while it is copied.
///
/// Exact for a valid hostlist. Only a `[` or `,` followed by a digit starts a range, and only
/// outside a group does `[` start a group, so even for invalid text a group takes at least
/// three bytes (`[1]`), a range two (`,1`) and a pattern two (`a,`); this bounds
/// [`PARSE_MEMORY_FACTOR`](super::PARSE_MEMORY_FACTOR).
struct Capacity {
    patterns: usize,
    groups: usize,
    ranges: usize,
}

impl Capacity {
    fn of(bytes: &[u8]) -> Self {
        let mut c = Capacity {
            patterns: 0,
            groups: 0,
            ranges: 0,
        };
        let mut in_group = false;
        let mut in_pattern = false;
        for (i, &b) in bytes.iter().enumerate() {
            let digit_next = bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            match b {
                b'[' if !in_group => {
                    c.groups += usize::from(digit_next);
                    c.ranges += usize::from(digit_next);
                    in_group = true;
                }
                b',' if in_group => c.ranges += usize::from(digit_next),
                b']' => in_group = false,
                _ => {}
            }
            let separator = !in_group && is_separator(b);
            c.patterns += usize::from(!separator && !in_pattern);
            in_pattern = !separator;
        }
        c
    }
}

/// Total bytes of the names a pattern expands to, given its literal bytes and groups.
fn pattern_bytes(len: usize, literal: usize, groups: &[Group], ranges: &[NumRange]) -> u128 {
    let len = len as u128;
    let digits: u128 = groups
        .iter()
        .map(|group| {
            let group_ranges =
                Ranges(&ranges[group.first_range as usize..group.end_range as usize]);
            // Each value of the group appears len / group.len times.
            let per_value = len / group_ranges.len() as u128;
            let sum: u128 = group_ranges
                .0
                .iter()
                .map(|r| padded_len_sum(r.lo, r.hi, r.width as usize))
                .sum();
            per_value * sum
        })
        .sum();
    len * literal as u128 + digits
}

struct Parser<'a> {
    input: &'a str,
    bytes: &'a [u8],
    i: usize,
    /// Where the pattern being read starts, for errors about its size.
    pattern_start: usize,
    groups: Vec<Group>,
    ranges: Vec<NumRange>,
}

impl Parser<'_> {
    /// One pattern starting at a non-separator byte; stops at a separator or the end. Returns
    /// the pattern (its `start` not yet set) and the bytes of the names it expands to.
    fn pattern(&mut self) -> Result<(Pattern, u128), ParseError> {
        let pattern_start = self.i;
        self.pattern_start = pattern_start;
        let first_group = self.groups.len();
        let mut lit_start = self.i;
        let mut head = None;
        let mut literal = 0;
        let mut len: usize = 1;
        loop {
            let b = self.bytes.get(self.i).copied();
            match b {
                Some(b'[') | Some(b']') | None => {}
                Some(b) if is_separator(b) => {}
                Some(_) => {
                    self.i += 1;
                    continue;
                }
            }
            let lit = Span {
                start: lit_start,
                end: self.i,
            };
            literal += lit.end - lit.start;
            match self.groups[first_group..].last_mut() {
                None if head.is_none() => head = Some(lit),
                Some(group) => group.lit = lit,
                None => {}
            }
            match b {
                Some(b'[') => {
                    let group_len = self.group()?;
                    // Checked per group so that the product cannot overflow.
                    len = len.saturating_mul(group_len);
                    if len > MAX_HOSTS {
                        return Err(self.error(
                            pattern_start,
                            ParseErrorKind::TooManyHosts { max: MAX_HOSTS },
                        ));
                    }
                    lit_start = self.i;
                }
                Some(b']') => {
                    return Err(self.error(self.i, ParseErrorKind::UnmatchedBracket));
                }
                _ => break,
            }
        }
        let bytes = pattern_bytes(len, literal, &self.groups[first_group..], &self.ranges);
        let pattern = Pattern {
            // `head` is set on the first pass through the loop.
            head: head.unwrap_or(Span {
                start: pattern_start,
                end: pattern_start,
            }),
            // Fewer than MAX_BYTES groups exist (checked in `group`).
            first_group: first_group as u32,
            end_group: self.groups.len() as u32,
            start: 0,
            // At most MAX_HOSTS (checked above).
            len: len as u32,
        };
        Ok((pattern, bytes))
    }

    /// A bracket group; `self.i` is at its `[`, and is left after its `]`. Pushes the group
    /// (with an empty literal, which the caller sets) and its ranges; returns its length.
    fn group(&mut self) -> Result<usize, ParseError> {
        let open = self.i;
        self.i += 1;
        // Every range and every group puts at least one digit into at least one name, so more
        // than MAX_BYTES of them cannot fit; checked here, this keeps their indices in u32.
        if self.ranges.len() >= MAX_BYTES || self.groups.len() >= MAX_BYTES {
            return Err(self.too_large(self.pattern_start));
        }
        let first_range = self.ranges.len();
        let mut len: u128 = 0;
        loop {
            // A range: lo, then optionally '-' hi.
            let lo_at = self.i;
            match self.peek(open)? {
                b',' | b']' => {
                    return Err(self.error(self.i, ParseErrorKind::EmptyRange));
                }
                _ => {}
            }
            let (lo, width) = self.number(open)?;
            let mut hi = lo;
            let mut expected = "',', '-' or ']'";
            if self.peek(open)? == b'-' {
                self.i += 1;
                (hi, _) = self.number(open)?;
                expected = "',' or ']'";
                if hi < lo {
                    let range = self.input[lo_at..self.i].to_owned();
                    return Err(self.error(lo_at, ParseErrorKind::DescendingRange { range }));
                }
            }
            if width > MAX_BYTES || self.ranges.len() >= MAX_BYTES {
                // A name holding this number, or one digit per range so far, is too long.
                return Err(self.too_large(self.pattern_start));
            }
            self.ranges.push(NumRange {
                lo,
                hi,
                width: width as u32,
                // `len` stays within MAX_HOSTS here (checked below), so it fits in u32.
                before: len as u32,
            });
            len += u128::from(hi - lo) + 1;
            if len > MAX_HOSTS as u128 {
                return Err(self.error(open, ParseErrorKind::TooManyHosts { max: MAX_HOSTS }));
            }
            match self.peek(open)? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.groups.push(Group {
                        first_range: first_range as u32,
                        end_range: self.ranges.len() as u32,
                        lit: Span {
                            start: self.i,
                            end: self.i,
                        },
                    });
                    return Ok(len as usize);
                }
                _ => return Err(self.unexpected(expected, open)),
            }
        }
    }

    /// The error `kind` at byte `pos` of the input.
    fn error(&self, pos: usize, kind: ParseErrorKind) -> ParseError {
        ParseError::new(self.input, pos, kind)
    }

    /// The error for names adding up to more than MAX_BYTES, passed at byte `pos`.
    fn too_large(&self, pos: usize) -> ParseError {
        self.error(pos, ParseErrorKind::TooLarge { max: MAX_BYTES })
    }

    /// A run of ASCII digits: its value and its length (the zero-padding width).
    fn number(&mut self, open: usize) -> Result<(u64, usize), ParseError> {
        let start = self.i;
        if !self.peek(open)?.is_ascii_digit() {
            return Err(self.unexpected("a digit", open));
        }
        let mut value: u64 = 0;
        let mut overflow = false;
        while let Some(&b) = self.bytes.get(self.i) {
            if !b.is_ascii_digit() {
                break;
            }
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
            {
                Some(v) => value = v,
                None => overflow = true,
            }
            self.i += 1;
        }
        if overflow {
            return Err(self.error(start, ParseErrorKind::NumberOverflow));
        }
        Ok((value, self.i - start))
    }

    /// The byte at the cursor inside the group opened at `open`; the end of input there means
    /// the group was never closed.
    fn peek(&self, open: usize) -> Result<u8, ParseError> {
        self.bytes
            .get(self.i)
            .copied()
            .ok_or_else(|| self.error(open, ParseErrorKind::UnclosedBracket))
    }

    /// The error for the character at the cursor, which the grammar does not allow there.
    fn unexpected(&self, expected: &'static str, open: usize) -> ParseError {
        let pos = self.i;
        // Inside a group the cursor only moves over ASCII, so it sits on a char boundary.
        match self.input[pos..].chars().next() {
            Some('[') => self.error(pos, ParseErrorKind::NestedBracket),
            Some(found) => self.error(pos, ParseErrorKind::UnexpectedChar { expected, found }),
            None => self.error(open, ParseErrorKind::UnclosedBracket),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::expand;
    use super::*;

    fn ok(s: &str) -> Vec<String> {
        expand(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn err(s: &str) -> String {
        match expand(s) {
            Ok(v) => panic!("{s:?} should fail, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn plain_names_and_separators() {
        assert_eq!(ok("node"), ["node"]);
        assert_eq!(ok("alpha,beta,gamma"), ["alpha", "beta", "gamma"]);
        assert_eq!(ok(""), Vec::<String>::new());
        assert_eq!(ok(" ,\t,\n "), Vec::<String>::new());
        assert_eq!(ok(",n1,,n2,"), ["n1", "n2"]);
        assert_eq!(ok("a b\tc\nd"), ["a", "b", "c", "d"]);
        assert_eq!(ok("n[1-2]\n"), ["n1", "n2"]);
        assert_eq!(ok("a\r\nb\x0cc"), ["a", "b", "c"]);
        assert_eq!(ok("a;b:c"), ["a;b:c"]);
        assert_eq!(ok("ünï-cödé1"), ["ünï-cödé1"]);
        // Digits in a plain name are text, however large.
        assert_eq!(ok("n18446744073709551616"), ["n18446744073709551616"]);
    }

    #[test]
    fn ranges_and_lists_in_brackets() {
        assert_eq!(ok("node[1-3]"), ["node1", "node2", "node3"]);
        assert_eq!(ok("n[1]"), ["n1"]);
        assert_eq!(ok("n[3-3]"), ["n3"]);
        assert_eq!(ok("gpu[01,07]"), ["gpu01", "gpu07"]);
        assert_eq!(
            ok("node[1-3],gpu[01,07]"),
            ["node1", "node2", "node3", "gpu01", "gpu07"]
        );
        assert_eq!(ok("o[3-4,6,7-9]"), ["o3", "o4", "o6", "o7", "o8", "o9"]);
        assert_eq!(ok("[1-3]"), ["1", "2", "3"]);
        assert_eq!(ok("n[3,1,2]"), ["n3", "n1", "n2"], "written order");
    }

    #[test]
    fn padding_follows_the_low_endpoint() {
        assert_eq!(ok("n[009-011]"), ["n009", "n010", "n011"]);
        assert_eq!(ok("b04-[09-10]"), ["b04-09", "b04-10"]);
        assert_eq!(ok("host-[001-002]"), ["host-001", "host-002"]);
        assert_eq!(ok("nodes[006,011]"), ["nodes006", "nodes011"]);
        // Mixed widths: Slurm pads to the width of `lo` as written and ignores `hi`'s.
        assert_eq!(ok("n[9-011]"), ["n9", "n10", "n11"]);
        assert_eq!(ok("n[011-12]"), ["n011", "n012"]);
        assert_eq!(ok("n[09-011]"), ["n09", "n10", "n11"]);
        assert_eq!(ok("n[01-3,1-02]"), ["n01", "n02", "n03", "n1", "n2"]);
        assert_eq!(ok("n[00]"), ["n00"]);
        assert_eq!(
            ok("n[0000000000000000000000001]"),
            ["n0000000000000000000000001"]
        );
    }

    #[test]
    fn duplicates_are_kept() {
        assert_eq!(ok("n[1-2],n1,n[1-2]"), ["n1", "n2", "n1", "n1", "n2"]);
        assert_eq!(ok("n[1,1,2]"), ["n1", "n1", "n2"]);
    }

    #[test]
    fn several_groups_multiply_in_slurm_order() {
        assert_eq!(ok("a[1-2]b[3-4]"), ["a1b3", "a1b4", "a2b3", "a2b4"]);
        assert_eq!(ok("n[1-2][3-4]"), ["n13", "n14", "n23", "n24"]);
        assert_eq!(
            ok("n[1-3]-x[1-2]"),
            ["n1-x1", "n1-x2", "n2-x1", "n2-x2", "n3-x1", "n3-x2"]
        );
        // Three or more groups: the last varies fastest, then the first, second, ….
        assert_eq!(
            ok("a[1-3]b[1-2]c[1]"),
            ["a1b1c1", "a2b1c1", "a3b1c1", "a1b2c1", "a2b2c1", "a3b2c1"]
        );
        let four = ok("n[1-2]b[3-4]c[5-6]d[7-8]");
        assert_eq!(
            &four[..5],
            ["n1b3c5d7", "n1b3c5d8", "n2b3c5d7", "n2b3c5d8", "n1b4c5d7"]
        );
        assert_eq!(four[8], "n1b3c6d7");
        assert_eq!(four.len(), 16);
    }

    #[test]
    fn suffixes_after_brackets() {
        assert_eq!(ok("n[1-2]x"), ["n1x", "n2x"]);
        assert_eq!(ok("gpu[1-2].ib"), ["gpu1.ib", "gpu2.ib"]);
        assert_eq!(ok("a[1-2]b[3]c"), ["a1b3c", "a2b3c"]);
    }

    #[test]
    fn large_numbers() {
        let max = u64::MAX;
        assert_eq!(ok(&format!("n[{max}]")), [format!("n{max}")]);
        assert_eq!(
            ok("n[4294967295-4294967296]"),
            ["n4294967295", "n4294967296"]
        );
    }

    #[test]
    fn bracket_errors() {
        assert_eq!(
            err("n[1-"),
            "invalid hostlist \"n[1-\": unclosed '[' at byte 1"
        );
        assert_eq!(
            err("a,n[1-2"),
            "invalid hostlist \"a,n[1-2\": unclosed '[' at byte 3"
        );
        assert_eq!(err("n["), "invalid hostlist \"n[\": unclosed '[' at byte 1");
        assert_eq!(
            err("n[1,"),
            "invalid hostlist \"n[1,\": unclosed '[' at byte 1"
        );
        assert_eq!(
            err("n1]"),
            "invalid hostlist \"n1]\": unmatched ']' at byte 2"
        );
        assert_eq!(
            err("a]b"),
            "invalid hostlist \"a]b\": unmatched ']' at byte 1"
        );
        assert_eq!(
            err("n[1]]"),
            "invalid hostlist \"n[1]]\": unmatched ']' at byte 4"
        );
        assert_eq!(
            err("n[[1]]"),
            "invalid hostlist \"n[[1]]\": nested '[' at byte 2"
        );
        assert_eq!(
            err("n[1,[2]]"),
            "invalid hostlist \"n[1,[2]]\": nested '[' at byte 4"
        );
        assert_eq!(
            err("n[1[2]]"),
            "invalid hostlist \"n[1[2]]\": nested '[' at byte 3"
        );
    }

    #[test]
    fn range_errors() {
        assert_eq!(
            err("n[]"),
            "invalid hostlist \"n[]\": empty range at byte 2"
        );
        assert_eq!(
            err("n[1,]"),
            "invalid hostlist \"n[1,]\": empty range at byte 4"
        );
        assert_eq!(
            err("n[,1]"),
            "invalid hostlist \"n[,1]\": empty range at byte 2"
        );
        assert_eq!(
            err("n[1,,2]"),
            "invalid hostlist \"n[1,,2]\": empty range at byte 4"
        );
        assert_eq!(
            err("n[a-b]"),
            "invalid hostlist \"n[a-b]\": expected a digit at byte 2, found 'a'"
        );
        assert_eq!(
            err("n[1-b]"),
            "invalid hostlist \"n[1-b]\": expected a digit at byte 4, found 'b'"
        );
        assert_eq!(
            err("n[-1]"),
            "invalid hostlist \"n[-1]\": expected a digit at byte 2, found '-'"
        );
        assert_eq!(
            err("n[1-]"),
            "invalid hostlist \"n[1-]\": expected a digit at byte 4, found ']'"
        );
        assert_eq!(
            err("n[1-2-3]"),
            "invalid hostlist \"n[1-2-3]\": expected ',' or ']' at byte 5, found '-'"
        );
        assert_eq!(
            err("n[1x]"),
            "invalid hostlist \"n[1x]\": expected ',', '-' or ']' at byte 3, found 'x'"
        );
        assert_eq!(
            err("n[ 1-2]"),
            "invalid hostlist \"n[ 1-2]\": expected a digit at byte 2, found ' '"
        );
        assert_eq!(
            err("n[+1]"),
            "invalid hostlist \"n[+1]\": expected a digit at byte 2, found '+'"
        );
        assert_eq!(
            err("n[1 ]"),
            "invalid hostlist \"n[1 ]\": expected ',', '-' or ']' at byte 3, found ' '"
        );
        assert_eq!(
            err("n[é]"),
            "invalid hostlist \"n[é]\": expected a digit at byte 2, found 'é'"
        );
        assert_eq!(
            err("n[5-3]"),
            "invalid hostlist \"n[5-3]\": descending range '5-3' at byte 2"
        );
        assert_eq!(
            err("x,n[1,011-9]"),
            "invalid hostlist \"x,n[1,011-9]\": descending range '011-9' at byte 6"
        );
        assert_eq!(
            err("n[18446744073709551616]"),
            "invalid hostlist \"n[18446744073709551616]\": number at byte 2 does not fit in 64 bits"
        );
        assert_eq!(
            err("n[1-99999999999999999999]"),
            "invalid hostlist \"n[1-99999999999999999999]\": number at byte 4 does not fit in 64 bits"
        );
    }

    #[test]
    fn absurd_expansions_are_refused_before_allocating() {
        assert_eq!(
            err("n[0-99999999999]"),
            "invalid hostlist \"n[0-99999999999]\": expands to more than 4194304 hosts (limit passed at byte 1)"
        );
        assert!(err(&format!("n[0-{}]", u64::MAX)).contains("more than 4194304 hosts"));
        // Each group is small, the product is not.
        assert!(err("a[0-9999]b[0-9999]").contains("more than 4194304 hosts"));
        assert!(
            err("a[0-99]b[0-99]c[0-99]d[0-99]e[0-99]f[0-99]g[0-99]h[0-99]i[0-99]j[0-99]")
                .contains("more than 4194304 hosts")
        );
        // Many patterns add up.
        let e = err("a[0-3000000],b[0-3000000]");
        assert!(e.contains("passed at byte 13"), "{e}");
        // Few hosts, long names.
        let long = format!("{}[1-1000000]", "x".repeat(300));
        assert!(err(&long).contains("bytes of host names"));
        // At the limit is fine, and counted without expanding.
        let at_limit = HostList::parse(&format!("n[1-{MAX_HOSTS}]")).unwrap();
        assert_eq!(at_limit.len(), MAX_HOSTS);
    }
}
