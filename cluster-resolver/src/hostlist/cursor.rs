//! Walking a [`HostList`] in order: [`Cursor`] (borrowed names, no allocation per host) and
//! [`Iter`] (owned names).

use std::iter::FusedIterator;

use super::host_list::HostList;
use super::layout::GroupPos;

/// Yields the hosts of a [`HostList`] in order as `&str`s borrowed from one reused buffer.
///
/// From one name to the next only the last digits change, so the buffer is updated like an
/// odometer (usually one byte) instead of being rewritten; this is what makes
/// [`HostList::to_vec`] cost little more than one allocation per host.
///
/// Made by [`HostList::cursor`]. Not an [`Iterator`]: each name borrows the cursor until the next
/// call.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    list: &'a HostList,
    /// Index of the pattern after the one in `buf` (0 before the first call).
    next_pattern: usize,
    /// Position in each group of the current pattern; the fastest group's value is kept in
    /// `value` instead while the fast path runs.
    state: Vec<GroupPos>,
    /// The current name.
    buf: String,
    /// Fast path: the fastest group's current value and the end of its current range
    /// (both 0 for a pattern without groups, so the fast path is never taken there).
    value: u64,
    hi: u64,
    /// Byte span in `buf` of the fastest group's digits, and the literal text after them.
    digits: (usize, usize),
    suffix: &'a str,
    remaining: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(list: &'a HostList) -> Self {
        Cursor {
            list,
            next_pattern: 0,
            state: Vec::new(),
            buf: String::new(),
            value: 0,
            hi: 0,
            digits: (0, 0),
            suffix: "",
            remaining: list.len,
        }
    }

    /// The next host, or `None` when all have been seen.
    pub fn next_name(&mut self) -> Option<&str> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        if self.value < self.hi {
            // The common case: next number of the same range.
            self.value += 1;
            if !self.increment_digits() {
                self.render();
            }
        } else if self.next_pattern == 0 || !self.step() {
            self.load_next_pattern();
        }
        Some(&self.buf)
    }

    /// Number of hosts not yet returned.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Starts the next pattern at its first host. Only called while hosts remain, so the
    /// pattern exists (patterns are never empty).
    fn load_next_pattern(&mut self) {
        let list = self.list;
        let pattern = &list.patterns[self.next_pattern];
        self.next_pattern += 1;
        self.state.clear();
        self.state.extend(
            list.groups_of(pattern)
                .iter()
                .map(|group| list.ranges_of(group).first()),
        );
        if let Some(&(_, v)) = self.state.last() {
            self.value = v;
        }
        self.render();
    }

    /// At the end of the fastest group's range: moves to its next range, or wraps it and
    /// carries into the others in Slurm's order (first, second, …, last but one). `false` when
    /// the pattern is exhausted.
    fn step(&mut self) -> bool {
        let list = self.list;
        let pattern = &list.patterns[self.next_pattern - 1];
        let Some((fastest, others)) = list.groups_of(pattern).split_last() else {
            return false;
        };
        let Some((fast_pos, other_pos)) = self.state.split_last_mut() else {
            return false;
        };
        fast_pos.1 = self.value;
        let moved = list.ranges_of(fastest).advance(fast_pos)
            || others
                .iter()
                .zip(other_pos)
                .any(|(group, pos)| list.ranges_of(group).advance(pos));
        if moved {
            self.value = fast_pos.1;
            self.render();
        }
        moved
    }

    /// Adds one to the fastest group's digits in `buf`; `false` if that needs one more digit
    /// (all nines), which the caller handles by rewriting the name.
    fn increment_digits(&mut self) -> bool {
        let (start, end) = self.digits;
        let bytes = self.buf.as_bytes();
        // `String` offers no safe in-place byte write; truncating and re-pushing the changed
        // tail (usually one digit and an empty suffix) is as cheap.
        let last = bytes[end - 1];
        if last != b'9' {
            self.buf.truncate(end - 1);
            self.buf.push(char::from(last + 1));
        } else {
            let Some(last_non_nine) = (start..end).rev().find(|&j| bytes[j] != b'9') else {
                return false;
            };
            let bumped = char::from(bytes[last_non_nine] + 1);
            self.buf.truncate(last_non_nine);
            self.buf.push(bumped);
            for _ in last_non_nine + 1..end {
                self.buf.push('0');
            }
        }
        self.buf.push_str(self.suffix);
        true
    }

    /// Writes the current name from scratch (with the fastest group at `self.value`), and sets
    /// up the fast path for its range.
    fn render(&mut self) {
        let list = self.list;
        let source: &'a str = &list.source;
        let pattern = &list.patterns[self.next_pattern - 1];
        self.buf.clear();
        self.buf
            .push_str(&source[pattern.head.start..pattern.head.end]);
        let groups = list.groups_of(pattern);
        let last = groups.len().wrapping_sub(1);
        for (k, (group, &pos)) in groups.iter().zip(&self.state).enumerate() {
            let text = &source[group.lit.start..group.lit.end];
            let ranges = list.ranges_of(group);
            if k == last {
                let start = self.buf.len();
                ranges.push_value(&mut self.buf, (pos.0, self.value));
                self.digits = (start, self.buf.len());
                self.hi = ranges.hi(pos);
                self.suffix = text;
            } else {
                ranges.push_value(&mut self.buf, pos);
            }
            self.buf.push_str(text);
        }
        if groups.is_empty() {
            self.value = 0;
            self.hi = 0;
        }
    }
}

/// Iterator over the hosts of a [`HostList`] as owned `String`s; made by [`HostList::iter`].
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    cursor: Cursor<'a>,
}

impl<'a> Iter<'a> {
    pub(super) fn new(cursor: Cursor<'a>) -> Self {
        Iter { cursor }
    }
}

impl Iterator for Iter<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        self.cursor.next_name().map(str::to_owned)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.cursor.remaining, Some(self.cursor.remaining))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl FusedIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(s: &str) -> Vec<String> {
        let list = HostList::parse(s).unwrap();
        let mut cursor = list.cursor();
        let mut out = Vec::new();
        while let Some(name) = cursor.next_name() {
            out.push(name.to_owned());
            assert_eq!(cursor.remaining(), list.len() - out.len());
        }
        assert_eq!(cursor.next_name(), None, "fused");
        out
    }

    #[test]
    fn carries_across_digit_lengths_and_padding() {
        assert_eq!(walk("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(walk("n[98-100]"), ["n98", "n99", "n100"]);
        assert_eq!(walk("n[0-1]"), ["n0", "n1"]);
        assert_eq!(walk("n[1-2]y,n[5]"), ["n1y", "n2y", "n5"]);
        assert_eq!(walk("n[098-101]x"), ["n098x", "n099x", "n100x", "n101x"]);
        assert_eq!(walk("n[99-100]-ib"), ["n99-ib", "n100-ib"]);
        assert_eq!(walk("n[0009-0010]"), ["n0009", "n0010"]);
        let top = format!("n[{}-{}]", u64::MAX - 1, u64::MAX);
        assert_eq!(
            walk(&top),
            [format!("n{}", u64::MAX - 1), format!("n{}", u64::MAX)]
        );
    }

    #[test]
    fn moves_between_ranges_groups_and_patterns() {
        assert_eq!(walk("n[1,3-4,2]"), ["n1", "n3", "n4", "n2"]);
        assert_eq!(
            walk("a[1-2]b[9-10],c,d[7]"),
            ["a1b9", "a1b10", "a2b9", "a2b10", "c", "d7"]
        );
        assert_eq!(walk(""), Vec::<String>::new());
    }

    #[test]
    fn iter_is_exact_size() {
        let list = HostList::parse("n[1-5],m").unwrap();
        let mut it = list.iter();
        assert_eq!(it.len(), 6);
        it.next();
        assert_eq!(it.size_hint(), (5, Some(5)));
        assert_eq!(it.count(), 5);
    }
}
