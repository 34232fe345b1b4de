//! Remote tensors dropped but not yet freed on their task: each `handle_to_decref` waits for
//! the next Enqueue to that task and rides along with it, so dropping a tensor costs no round
//! trip.

use std::sync::Mutex;

use cluster_proto::eager::{QueueItem, RemoteTensorHandle, queue_item};

use crate::TaskId;

#[derive(Debug, Default)]
pub(crate) struct Releases {
    /// (context id, task, handle) of every dropped tensor not yet sent.
    pending: Mutex<Vec<(u64, TaskId, RemoteTensorHandle)>>,
}

impl Releases {
    pub(crate) fn push(&self, context_id: u64, task: TaskId, handle: RemoteTensorHandle) {
        self.lock().push((context_id, task, handle));
    }

    /// Takes the releases due to `task` in context `context_id`, as the queue items that
    /// carry them; releases of other contexts are dropped, as closing or replacing a context
    /// frees all its tensors.
    pub(crate) fn take(&self, context_id: u64, task: &TaskId) -> Vec<QueueItem> {
        let mut pending = self.lock();
        let mut due = Vec::new();
        pending.retain(|(ctx, t, handle)| {
            if *ctx != context_id {
                return false;
            }
            if t == task {
                due.push(QueueItem {
                    item: Some(queue_item::Item::HandleToDecref(handle.clone())),
                });
                return false;
            }
            true
        });
        due
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, TaskId, RemoteTensorHandle)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}
