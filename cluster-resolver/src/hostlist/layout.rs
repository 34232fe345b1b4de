//! How a parsed [`HostList`] is stored: name patterns, bracket groups and numeric ranges
//! pointing into the hostlist's text, and the hosts read back from them. Parsing, cursors and
//! the public API all build on this.

use super::digits::push_padded;
use super::host_list::HostList;

/// A byte span of literal text in [`HostList::source`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
}

/// One separator-delimited name pattern: `head`, then bracket groups, each followed by literal
/// text. Indices are `u32`: there are fewer groups than bytes of names (each group adds a digit
/// to at least one name), and those are at most [`MAX_BYTES`](super::MAX_BYTES).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pattern {
    pub(super) head: Span,
    /// This pattern's groups: `HostList::groups[first_group..end_group]`.
    pub(super) first_group: u32,
    pub(super) end_group: u32,
    /// Index of this pattern's first host in the whole list (at most `MAX_HOSTS`).
    pub(super) start: u32,
    /// Number of hosts (product of the group lengths, at most `MAX_HOSTS`).
    pub(super) len: u32,
}

/// One `[...]` and the literal text after it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    /// This group's ranges: `HostList::ranges[first_range..end_range]`, never empty.
    pub(super) first_range: u32,
    pub(super) end_range: u32,
    /// The literal text after the `]`.
    pub(super) lit: Span,
}

/// One element of a group, `lo` or `lo-hi`, inclusive.
#[derive(Clone, Copy, Debug)]
pub(super) struct NumRange {
    pub(super) lo: u64,
    pub(super) hi: u64,
    /// Minimum digits: the length of `lo` as written, as Slurm does (`n[9-011]` is n9,n10,n11).
    /// At most `MAX_BYTES` (a wider number could not fit in the names).
    pub(super) width: u32,
    /// Hosts in the group's earlier ranges (below `MAX_HOSTS`), to find the range of the i-th
    /// host by bisection.
    pub(super) before: u32,
}

/// A position inside a group: index of the range and the current value in it.
pub(super) type GroupPos = (usize, u64);

/// A group's ranges, borrowed from its [`HostList`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Ranges<'a>(pub(super) &'a [NumRange]);

impl Ranges<'_> {
    /// The number of values in the group.
    pub(super) fn len(&self) -> usize {
        self.0
            .last()
            .map_or(0, |r| r.before as usize + (r.hi - r.lo) as usize + 1)
    }

    /// The group's first position.
    pub(super) fn first(&self) -> GroupPos {
        (0, self.0[0].lo)
    }

    /// The end of the range at `pos`.
    pub(super) fn hi(&self, pos: GroupPos) -> u64 {
        self.0[pos.0].hi
    }

    /// The position of the `i`-th value, `i < self.len()`.
    fn nth(&self, i: usize) -> GroupPos {
        let r = self.0.partition_point(|r| r.before as usize <= i) - 1;
        (r, self.0[r].lo + (i - self.0[r].before as usize) as u64)
    }

    /// Moves to the next value; at the end wraps to the first and returns `false`.
    pub(super) fn advance(&self, pos: &mut GroupPos) -> bool {
        let (r, v) = *pos;
        if v < self.0[r].hi {
            pos.1 = v + 1;
            true
        } else if r + 1 < self.0.len() {
            *pos = (r + 1, self.0[r + 1].lo);
            true
        } else {
            *pos = self.first();
            false
        }
    }

    /// Appends the value at `pos`, zero padded to its range's width.
    pub(super) fn push_value(&self, out: &mut String, pos: GroupPos) {
        push_padded(out, pos.1, self.0[pos.0].width as usize);
    }
}

impl HostList {
    /// The groups of `pattern`.
    pub(super) fn groups_of(&self, pattern: &Pattern) -> &[Group] {
        &self.groups[pattern.first_group as usize..pattern.end_group as usize]
    }

    /// The ranges of `group`.
    pub(super) fn ranges_of(&self, group: &Group) -> Ranges<'_> {
        Ranges(&self.ranges[group.first_range as usize..group.end_range as usize])
    }

    /// The text of `span`.
    pub(super) fn text(&self, span: Span) -> &str {
        &self.source[span.start..span.end]
    }

    /// Appends the `i`-th host of `pattern`, `i < pattern.len`.
    ///
    /// Slurm's order: the last group varies fastest, then the first, second, … group, so the
    /// last-but-one group is the slowest (lexicographic for one or two groups).
    pub(super) fn push_host(&self, pattern: &Pattern, i: usize, out: &mut String) {
        out.push_str(self.text(pattern.head));
        let groups = self.groups_of(pattern);
        let Some((fastest, rest)) = groups.split_last() else {
            return;
        };
        let fastest_len = self.ranges_of(fastest).len();
        // Stride of group k (k < last) is len(last) * len(0) * … * len(k-1).
        let mut stride = fastest_len;
        for (k, group) in groups.iter().enumerate() {
            let ranges = self.ranges_of(group);
            let index = if k == rest.len() {
                i % fastest_len
            } else {
                let index = (i / stride) % ranges.len();
                stride *= ranges.len();
                index
            };
            ranges.push_value(out, ranges.nth(index));
            out.push_str(self.text(group.lit));
        }
    }
}
