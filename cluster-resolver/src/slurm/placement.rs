//! Where Slurm puts each rank: the node and the task's index on it, from the tasks per node (in
//! nodelist order) and `SLURM_DISTRIBUTION`.

use super::Error;

/// The node-level task distributions whose layout this resolver can reproduce from the step's
/// variables alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Consecutive ranks fill a node before moving to the next (`SLURM_DISTRIBUTION` unset or
    /// `block`): with tasks per node 2,2,1, ranks 0..4 run on n1,n1,n2,n2,n3.
    Block,
    /// Ranks go round-robin over the nodes, skipping nodes that hold all their tasks
    /// (`cyclic`): with 2,2,1, ranks 0..4 run on n1,n2,n3,n1,n2.
    Cyclic,
}

impl Distribution {
    /// The distribution `SLURM_DISTRIBUTION` names (`None`: unset, which is block).
    ///
    /// Only `block` and `cyclic` are understood. Everything else — `plane`, `arbitrary`, and
    /// the two- and three-level forms such as `cyclic:block` — is
    /// [`Error::UnsupportedDistribution`], because computing a wrong cluster silently is
    /// worse than refusing.
    pub fn from_variable(value: Option<&str>) -> Result<Self, Error> {
        match value {
            None | Some("block") => Ok(Self::Block),
            Some("cyclic") => Ok(Self::Cyclic),
            Some(other) => Err(Error::UnsupportedDistribution {
                value: other.into(),
            }),
        }
    }

    /// The name Slurm uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::Cyclic => "cyclic",
        }
    }
}

/// Where one rank runs: the index of its node in the nodelist and its index among that node's
/// tasks (Slurm's `SLURM_LOCALID`, which numbers a node's tasks in rank order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    pub(super) node: u32,
    pub(super) local: u32,
}

/// The slot of every rank, in rank order, for nodes holding `counts[i]` tasks each.
///
/// Runs in time proportional to nodes plus tasks for both distributions (cyclic keeps only the
/// nodes that still have room, so one node with many tasks does not make every round visit all
/// the others). The caller bounds the total.
pub(super) fn place(counts: &[u32], distribution: Distribution) -> Vec<Slot> {
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut slots = Vec::with_capacity(total);
    match distribution {
        Distribution::Block => {
            for (node, &count) in counts.iter().enumerate() {
                slots.extend((0..count).map(|local| Slot {
                    node: node as u32,
                    local,
                }));
            }
        }
        Distribution::Cyclic => {
            // Nodes that still take a task this round, in nodelist order.
            let mut open: Vec<u32> = (0..counts.len() as u32)
                .filter(|&n| counts[n as usize] > 0)
                .collect();
            let mut round = 0;
            while !open.is_empty() {
                slots.extend(open.iter().map(|&node| Slot { node, local: round }));
                round += 1;
                open.retain(|&n| counts[n as usize] > round);
            }
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(counts: &[u32], d: Distribution) -> Vec<(u32, u32)> {
        place(counts, d)
            .into_iter()
            .map(|s| (s.node, s.local))
            .collect()
    }

    #[test]
    fn block_and_cyclic_match_what_srun_did() {
        // srun -N3 -n5 on the local cluster: 2(x2),1.
        assert_eq!(
            nodes(&[2, 2, 1], Distribution::Block),
            [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
        );
        assert_eq!(
            nodes(&[2, 2, 1], Distribution::Cyclic),
            [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1)]
        );
    }

    #[test]
    fn cyclic_skips_full_nodes() {
        assert_eq!(
            nodes(&[3, 1, 0, 2], Distribution::Cyclic),
            [(0, 0), (1, 0), (3, 0), (0, 1), (3, 1), (0, 2)]
        );
        assert_eq!(nodes(&[], Distribution::Cyclic), []);
        assert_eq!(nodes(&[0, 0], Distribution::Block), []);
    }

    #[test]
    fn every_task_of_every_node_appears_once() {
        let counts = [5, 1, 3, 0, 8, 2];
        for d in [Distribution::Block, Distribution::Cyclic] {
            let mut got = nodes(&counts, d);
            got.sort_unstable();
            let want: Vec<(u32, u32)> = counts
                .iter()
                .enumerate()
                .flat_map(|(n, &c)| (0..c).map(move |l| (n as u32, l)))
                .collect();
            assert_eq!(got, want, "{d:?}");
        }
    }

    #[test]
    fn distribution_names() {
        assert_eq!(
            Distribution::from_variable(None).unwrap(),
            Distribution::Block
        );
        assert_eq!(
            Distribution::from_variable(Some("block")).unwrap(),
            Distribution::Block
        );
        assert_eq!(
            Distribution::from_variable(Some("cyclic")).unwrap(),
            Distribution::Cyclic
        );
        for other in [
            "plane",
            "arbitrary",
            "cyclic:block",
            "block:cyclic",
            "Cyclic",
            "",
        ] {
            let e = Distribution::from_variable(Some(other)).unwrap_err();
            assert!(e.to_string().contains(&format!("{other:?}")), "{e}");
        }
    }
}
