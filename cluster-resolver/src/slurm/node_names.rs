//! The step's node names, in node order, in one buffer.

use crate::hostlist::HostList;

/// Node names back to back in one string: 8 bytes per node beyond the names themselves, where a
/// `Vec<String>` takes 24 and a heap block of at least 32 per node (a 4-million-node
/// `SLURM_STEP_NODELIST` of short names took over 200 MB that way).
#[derive(Debug)]
pub(super) struct NodeNames {
    text: String,
    /// End of each name in `text`.
    ends: Vec<usize>,
}

impl NodeNames {
    /// The hosts of `list`, in order.
    pub(super) fn from_hostlist(list: &HostList) -> Self {
        Self::collect(list.len(), |push| {
            let mut cursor = list.cursor();
            while let Some(name) = cursor.next_name() {
                push(name);
            }
        })
    }

    /// The given names, in order.
    pub(super) fn from_names<'a>(names: impl Iterator<Item = &'a str> + Clone) -> Self {
        let len = names.clone().count();
        Self::collect(len, |push| names.clone().for_each(push))
    }

    /// Walks the names twice through `walk`: once to size the buffer, once to fill it, so it
    /// is allocated once at its final size.
    fn collect(len: usize, walk: impl Fn(&mut dyn FnMut(&str))) -> Self {
        let mut bytes = 0;
        walk(&mut |name| bytes += name.len());
        let mut names = Self {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(len),
        };
        walk(&mut |name| {
            names.text.push_str(name);
            names.ends.push(names.text.len());
        });
        names
    }

    /// The number of nodes.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The name of node `i`, `i < len()`.
    pub(super) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The first name, in node order, that an earlier node already has.
    pub(super) fn first_duplicate(&self) -> Option<&str> {
        // Positions sorted by (name, position): 4 bytes per node, where a hash set of names
        // takes 16 and more. In each run of one name, its second position is where it repeats.
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            self.get(a as usize)
                .cmp(self.get(b as usize))
                .then(a.cmp(&b))
        });
        order
            .windows(2)
            .filter(|w| self.get(w[0] as usize) == self.get(w[1] as usize))
            .map(|w| w[1])
            .min()
            .map(|i| self.get(i as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_order_and_first_repeat() {
        let list = HostList::parse("n[1-3],m,n2,m").unwrap();
        let names = NodeNames::from_hostlist(&list);
        assert_eq!(names.len(), 6);
        assert_eq!(names.get(0), "n1");
        assert_eq!(names.get(3), "m");
        assert_eq!(names.first_duplicate(), Some("n2"));
        let names = NodeNames::from_names(["b", "a", "c"].into_iter());
        assert_eq!(names.get(2), "c");
        assert_eq!(names.first_duplicate(), None);
        let names = NodeNames::from_names(["a", "b", "b", "a"].into_iter());
        assert_eq!(names.first_duplicate(), Some("b"));
    }
}
