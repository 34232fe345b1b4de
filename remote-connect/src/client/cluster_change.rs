//! What a change of the cluster did to a context: the tasks it added, removed and replaced,
//! and whether it kept the context (an update) or made a new one (a reset).

use std::collections::{BTreeMap, BTreeSet};

use crate::TaskId;

/// One change of the cluster as a [`Follow`](crate::Follow) applied it, published on
/// [`Follow::subscribe`](crate::Follow::subscribe).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterChange {
    /// Tasks new to the cluster.
    pub added: Vec<TaskId>,
    /// Tasks that left it: their devices are gone and their handles answer
    /// [`Error::StaleDevice`](crate::Error::StaleDevice).
    pub removed: Vec<TaskId>,
    /// Tasks still in the cluster that were given the context again: at another address, or a
    /// new process at the same one. Their device handles stay valid (the names are the same);
    /// tensors they held are gone.
    pub replaced: Vec<TaskId>,
    /// Whether TensorFlow's rule made this a reset: a new context, every earlier
    /// [`DeviceHandle`](crate::DeviceHandle) stale. Otherwise the context was updated in
    /// place and what lives on unchanged tasks keeps working.
    pub reset: bool,
    /// How many devices the context lists now (this process's included).
    pub devices: usize,
    /// The context id after the change.
    pub context_id: u64,
    /// The context's view id after the change.
    pub view_id: u64,
}

/// The tasks a change adds, removes and replaces, each list ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Moves {
    pub(crate) added: Vec<TaskId>,
    pub(crate) removed: Vec<TaskId>,
    pub(crate) replaced: Vec<TaskId>,
}

impl Moves {
    /// Sorts `changed` (tasks of either membership that do not keep their context as it was)
    /// by where they are: only in `after` is added, only in `before` removed, in both replaced.
    pub(crate) fn sort<'a, V, W>(
        before: &BTreeMap<TaskId, V>,
        after: &BTreeMap<TaskId, W>,
        changed: impl IntoIterator<Item = &'a TaskId>,
    ) -> Self {
        let mut moves = Self::default();
        for task in changed {
            let list = match (before.contains_key(task), after.contains_key(task)) {
                (false, _) => &mut moves.added,
                (true, false) => &mut moves.removed,
                (true, true) => &mut moves.replaced,
            };
            list.push(task.clone());
        }
        moves
    }

    /// Between two memberships (task → address) when every task gets a new context: the
    /// tasks in one only, and those at another address.
    pub(crate) fn between(
        before: &BTreeMap<TaskId, String>,
        after: &BTreeMap<TaskId, String>,
    ) -> Self {
        let changed: BTreeSet<&TaskId> = before
            .keys()
            .chain(after.keys())
            .filter(|task| before.get(*task) != after.get(*task))
            .collect();
        Self::sort(before, after, changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(tasks: &[(&str, u32, &str)]) -> BTreeMap<TaskId, String> {
        tasks
            .iter()
            .map(|(job, task, address)| (TaskId::new(*job, *task), (*address).to_owned()))
            .collect()
    }

    #[test]
    fn a_membership_change_names_each_task_once() {
        let before = members(&[("worker", 0, "a:1"), ("worker", 1, "b:1"), ("ps", 0, "p:1")]);
        let after = members(&[
            ("worker", 0, "a:1"),
            ("worker", 1, "c:1"),
            ("worker", 2, "d:1"),
        ]);
        let moves = Moves::between(&before, &after);
        assert_eq!(moves.added, [TaskId::new("worker", 2)]);
        assert_eq!(moves.removed, [TaskId::new("ps", 0)]);
        assert_eq!(moves.replaced, [TaskId::new("worker", 1)]);
        assert_eq!(Moves::between(&after, &after), Moves::default());
    }
}
