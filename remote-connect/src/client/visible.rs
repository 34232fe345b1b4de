//! Which of the cluster's devices one task was given: all of them (a task without filters), or
//! some, by position in the connection's device list. Kept as positions so a 1,024-task
//! cluster does not hold a million copies of device names.

use std::sync::Arc;

use device_filter::{ClusterDeviceFilters, VisibilityIndex};

use crate::TaskId;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Visible {
    All,
    Some(Vec<usize>),
}

impl Visible {
    /// TensorFlow's rule for `task`: no filters means every device.
    pub(crate) fn of(
        filters: &ClusterDeviceFilters,
        index: &VisibilityIndex<'_>,
        task: &TaskId,
    ) -> Self {
        if filters.filters(&task.job, task.task).is_empty() {
            Visible::All
        } else {
            Visible::Some(index.visible_indices(&task.job, task.task))
        }
    }

    pub(crate) fn contains(&self, i: usize) -> bool {
        match self {
            Visible::All => true,
            Visible::Some(list) => list.binary_search(&i).is_ok(),
        }
    }

    /// The positions, given how many devices there are.
    pub(crate) fn positions(&self, total: usize) -> Vec<usize> {
        match self {
            Visible::All => (0..total).collect(),
            Visible::Some(list) => list.clone(),
        }
    }
}

/// The names a task was given, from the connection's shared name list.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    pub(crate) names: Arc<Vec<String>>,
    pub(crate) visible: Visible,
}

impl Sent {
    pub(crate) fn none() -> Self {
        Self {
            names: Arc::default(),
            visible: Visible::Some(Vec::new()),
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<String> {
        match &self.visible {
            Visible::All => self.names.as_ref().clone(),
            Visible::Some(list) => list.iter().map(|&i| self.names[i].clone()).collect(),
        }
    }
}
