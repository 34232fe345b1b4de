//! [`HostList`], the parsed form of a Slurm hostlist, and its public API: parsing, counting,
//! indexing and walking its hosts. How its parts are stored is `layout.rs`'s.

use super::ParseError;
use super::cursor::{Cursor, Iter};
use super::layout::{Group, NumRange, Pattern};
use super::parse::parse;

/// A parsed Slurm hostlist: the name patterns and their numeric ranges, not the names.
///
/// Memory is proportional to the text of the hostlist, not to the number of hosts, so
/// [`len`](Self::len), [`get`](Self::get) and [`cursor`](Self::cursor) work on
/// `rack[000-999]-node[0000-4095]` without writing four million names. Parsing checks the same
/// limits ([`MAX_HOSTS`](super::MAX_HOSTS), [`MAX_BYTES`](super::MAX_BYTES)) as
/// [`expand`](super::expand), so every `HostList` can also be expanded.
///
/// Patterns, bracket groups and ranges are each kept in one array sized before parsing, so a
/// parsed list takes at most [`PARSE_MEMORY_FACTOR`](super::PARSE_MEMORY_FACTOR)
/// bytes per byte of text, whatever the text (`n[1][1][1]…` or `[1],[1],…` included).
///
/// ```
/// use cluster_resolver::hostlist::HostList;
///
/// let hosts = HostList::parse("gpu[01-04],login")?;
/// assert_eq!(hosts.len(), 5);
/// assert_eq!(hosts.get(3).as_deref(), Some("gpu04"));
/// assert_eq!(hosts.iter().last().as_deref(), Some("login"));
///
/// // Walk all names through one reused buffer: no allocation per host.
/// let mut cursor = hosts.cursor();
/// let mut bytes = 0;
/// while let Some(name) = cursor.next_name() {
///     bytes += name.len();
/// }
/// assert_eq!(bytes, 4 * 5 + 5);
/// # Ok::<(), cluster_resolver::hostlist::ParseError>(())
/// ```
#[derive(Clone, Debug)]
pub struct HostList {
    /// The hostlist as given; literal text of the patterns points into it.
    pub(super) source: Box<str>,
    pub(super) patterns: Vec<Pattern>,
    /// The bracket groups of every pattern, pattern after pattern.
    pub(super) groups: Vec<Group>,
    /// The ranges of every group, group after group.
    pub(super) ranges: Vec<NumRange>,
    pub(super) len: usize,
}

impl HostList {
    /// Parses a Slurm hostlist such as `node[001-128],login[1-2]`.
    ///
    /// See the [module documentation](super) for the grammar, the limits and the errors.
    pub fn parse(s: &str) -> Result<Self, ParseError> {
        parse(s)
    }

    /// Number of hosts, duplicates included, without expanding.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the hostlist names no host (it was empty or only separators).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `i`-th host in Slurm's order, or `None` past the end. Costs one allocation and a
    /// bisection, not an expansion.
    pub fn get(&self, i: usize) -> Option<String> {
        if i >= self.len {
            return None;
        }
        let p = self.patterns.partition_point(|p| p.start as usize <= i) - 1;
        let pattern = &self.patterns[p];
        let mut out = String::new();
        self.push_host(pattern, i - pattern.start as usize, &mut out);
        Some(out)
    }

    /// Iterates over the hosts as owned `String`s, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(self.cursor())
    }

    /// A cursor that yields each host as a `&str` borrowed from one reused buffer: the way to
    /// look at every name without allocating one `String` per host.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor::new(self)
    }

    /// All hosts, in order; the same as [`expand`](super::expand).
    pub fn to_vec(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.len);
        let mut cursor = self.cursor();
        while let Some(name) = cursor.next_name() {
            // `to_owned` allocates exactly `name.len()` bytes.
            out.push(name.to_owned());
        }
        out
    }

    /// The hostlist text this was parsed from.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl std::str::FromStr for HostList {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        Self::parse(s)
    }
}

impl<'a> IntoIterator for &'a HostList {
    type Item = String;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_by_get(list: &HostList) -> Vec<String> {
        (0..list.len()).map(|i| list.get(i).unwrap()).collect()
    }

    #[test]
    fn get_follows_slurm_order_for_several_groups() {
        let list = HostList::parse("a[1-2]b[3-4]c[5-6]").unwrap();
        let want = [
            "a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6",
        ];
        assert_eq!(all_by_get(&list), want);
        assert_eq!(list.to_vec(), want);
    }

    #[test]
    fn get_agrees_with_iteration() {
        for s in [
            "",
            "n1",
            "n[1-3],m,x[09-11]y",
            "a[1,3-4]b[0-1]c[7]d[2-3,5]e",
            "[8-12][1-2]",
            "p[98-101],q[1-2,1-2]",
        ] {
            let list = HostList::parse(s).unwrap();
            let by_iter: Vec<String> = list.iter().collect();
            assert_eq!(all_by_get(&list), by_iter, "{s:?}");
            assert_eq!(list.len(), by_iter.len());
            assert_eq!(list.get(list.len()), None);
        }
    }

    #[test]
    fn len_without_expanding() {
        let list = HostList::parse("rack[000-999]-node[0000-4095]").unwrap();
        assert_eq!(list.len(), 4_096_000);
        assert_eq!(list.get(0).as_deref(), Some("rack000-node0000"));
        assert_eq!(list.get(4096).as_deref(), Some("rack001-node0000"));
        assert_eq!(list.get(4_095_999).as_deref(), Some("rack999-node4095"));
    }

    #[test]
    fn keeps_source_and_parses_with_from_str() {
        let list: HostList = "n[1-2]".parse().unwrap();
        assert_eq!(list.as_str(), "n[1-2]");
        assert!(!list.is_empty());
        assert!(HostList::parse(" , ").unwrap().is_empty());
        let names: Vec<String> = (&list).into_iter().collect();
        assert_eq!(names, ["n1", "n2"]);
    }
}
