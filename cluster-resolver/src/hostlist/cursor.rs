//! Walking a [`HostList`] in order: [`Cursor`] (borrowed names, no allocation per host) and
//! [`Iter`] (owned names).

use std::iter::FusedIterator;

use super::host_list::{GroupPos, HostList};

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
    /// Position in each group of the current pattern.
    state: Vec<GroupPos>,
    /// The current name.
    buf: String,
    /// Byte span in `buf` of the last (fastest) group's digits.
    digits: (usize, usize),
    remaining: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(list: &'a HostList) -> Self {
        Cursor {
            list,
            next_pattern: 0,
            state: Vec::new(),
            buf: String::new(),
            digits: (0, 0),
            remaining: list.len,
        }
    }

    /// The next host, or `None` when all have been seen.
    pub fn next_name(&mut self) -> Option<&str> {
        if self.remaining == 0 {
            return None;
        }
        if self.next_pattern == 0 || !self.step() {
            self.load_next_pattern();
        }
        self.remaining -= 1;
        Some(&self.buf)
    }

    /// Number of hosts not yet returned.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Starts the next pattern at its first host. Only called while hosts remain, so the
    /// pattern exists (patterns are never empty).
    fn load_next_pattern(&mut self) {
        let pattern = &self.list.patterns[self.next_pattern];
        self.next_pattern += 1;
        self.state.clear();
        self.state
            .extend(pattern.tail.iter().map(|(group, _)| group.first()));
        self.render();
    }

    /// Moves to the next host of the current pattern; `false` when the pattern is exhausted.
    fn step(&mut self) -> bool {
        let pattern = &self.list.patterns[self.next_pattern - 1];
        let n = pattern.tail.len();
        if n == 0 {
            return false;
        }
        let fastest = &pattern.tail[n - 1].0;
        let (r, v) = self.state[n - 1];
        if v < fastest.ranges[r].hi {
            self.state[n - 1].1 = v + 1;
            if !self.increment_digits() {
                self.render();
            }
            return true;
        }
        // The fastest group moves to its next range, or wraps and carries into the others in
        // Slurm's order (first, second, …, last but one).
        let moved = fastest.advance(&mut self.state[n - 1])
            || pattern.tail[..n - 1]
                .iter()
                .zip(&mut self.state)
                .any(|((group, _), pos)| group.advance(pos));
        if moved {
            self.render();
        }
        moved
    }

    /// Adds one to the fastest group's digits in `buf`; `false` if that needs one more digit
    /// (all nines), which the caller handles by rewriting the name.
    fn increment_digits(&mut self) -> bool {
        let (start, end) = self.digits;
        let bytes = self.buf.as_bytes();
        let Some(last_non_nine) = (start..end).rev().find(|&j| bytes[j] != b'9') else {
            return false;
        };
        let bumped = char::from(bytes[last_non_nine] + 1);
        let nines = end - 1 - last_non_nine;
        // `String` offers no safe in-place byte write; truncating and re-pushing the changed
        // tail (usually one digit and an empty suffix) is as cheap.
        self.buf.truncate(last_non_nine);
        self.buf.push(bumped);
        for _ in 0..nines {
            self.buf.push('0');
        }
        let pattern = &self.list.patterns[self.next_pattern - 1];
        if let Some((_, suffix)) = pattern.tail.last() {
            self.buf
                .push_str(&self.list.source[suffix.start..suffix.end]);
        }
        true
    }

    /// Writes the current name from scratch.
    fn render(&mut self) {
        let source = &self.list.source;
        let pattern = &self.list.patterns[self.next_pattern - 1];
        self.buf.clear();
        self.buf
            .push_str(&source[pattern.head.start..pattern.head.end]);
        let last = pattern.tail.len().wrapping_sub(1);
        for (k, ((group, lit), &pos)) in pattern.tail.iter().zip(&self.state).enumerate() {
            let start = self.buf.len();
            group.push_value(&mut self.buf, pos);
            if k == last {
                self.digits = (start, self.buf.len());
            }
            self.buf.push_str(&source[lit.start..lit.end]);
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
