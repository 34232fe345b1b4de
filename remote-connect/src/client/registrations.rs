//! Functions registered on remote tasks: each function once per remote context and task, on
//! first use or by [`Context::register_function`].
//!
//! A registration is keyed by the context id and the task's device incarnation, so a full
//! reconnect (a new context id) or a task replaced by an update (a new incarnation, a fresh
//! context there) registers again on next use, and an update that keeps the task keeps its
//! registrations. Concurrent first calls share one registration: each (context, task,
//! function) has a once-cell, the only guard held across the RPC; the map's lock is held only
//! to find the cell.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cluster_proto::eager::{QueueItem, RegisterFunctionOp, queue_item};
use tokio::sync::OnceCell;

use super::Context;
use super::connection::Snapshot;
use super::ops::{enqueue, op_failure};
use crate::{Error, Function, TaskId};

#[derive(Debug, Default)]
pub(crate) struct Registrations {
    cells: Mutex<HashMap<Key, Arc<OnceCell<()>>>>,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Key {
    context_id: u64,
    task: TaskId,
    incarnation: u64,
    name: String,
    /// A different definition under the same name is sent again (and refused by TensorFlow).
    fingerprint: u64,
}

impl Registrations {
    /// The once-cell of `key`; cells of other contexts are dropped, as closing or replacing a
    /// context forgets its functions.
    fn cell(&self, key: Key) -> Arc<OnceCell<()>> {
        let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
        let context_id = key.context_id;
        cells.retain(|k, _| k.context_id == context_id);
        cells.entry(key).or_default().clone()
    }
}

impl Context {
    /// Registers `function`, with the functions it calls, on remote task `task`'s eager
    /// context (TensorFlow's `RegisterFunctionOp`), unless this context registered it there
    /// already. Calling a function with [`Op::function`](crate::Op::function) registers it
    /// first if needed, so this only moves the registration's round trip earlier.
    ///
    /// Registration is per remote context: a full reconnect forgets it (the next call
    /// registers again); an update in place keeps it, except on a task the update replaced.
    ///
    /// # Errors
    ///
    /// [`Error::Op`] with TensorFlow's status when the task refuses the definition (the
    /// context stays usable, and a later call tries again), [`Error::NotConnected`],
    /// [`Error::UnknownTask`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe as to the context: a dropped call may or may not have registered the
    /// function there (registering it again is harmless); a concurrent call waiting for the
    /// same registration takes it over.
    pub async fn register_function(&self, task: &TaskId, function: &Function) -> Result<(), Error> {
        let snapshot = self.snapshot();
        if snapshot.context_id == 0 {
            return Err(Error::NotConnected);
        }
        self.ensure_registered(&snapshot, task, function).await
    }

    /// Registers `function` on `task` in `snapshot`'s context, once.
    pub(super) async fn ensure_registered(
        &self,
        snapshot: &Snapshot,
        task: &TaskId,
        function: &Function,
    ) -> Result<(), Error> {
        let member = snapshot
            .members
            .get(task)
            .ok_or_else(|| Error::UnknownTask(task.clone()))?;
        let key = Key {
            context_id: snapshot.context_id,
            task: task.clone(),
            incarnation: member
                .remote
                .devices
                .first()
                .map_or(0, |(_, a)| a.incarnation),
            name: function.name().to_owned(),
            fingerprint: function.fingerprint(),
        };
        let link = member.link(task);
        let cell = self.registrations().cell(key);
        cell.get_or_try_init(|| async {
            let item = QueueItem {
                item: Some(queue_item::Item::RegisterFunction(RegisterFunctionOp {
                    function_def: Some(function.function_def().clone()),
                    is_component_function: false,
                    library: Some(function.library().clone()),
                })),
            };
            enqueue(&link.channel, snapshot.context_id, vec![item], snapshot)
                .await
                .map(drop)
                .map_err(|error| {
                    op_failure(
                        &link,
                        vec![format!("RegisterFunction({})", function.name())],
                        error,
                    )
                })
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(context_id: u64, name: &str) -> Key {
        Key {
            context_id,
            task: TaskId::new("worker", 0),
            incarnation: 7,
            name: name.into(),
            fingerprint: 1,
        }
    }

    #[test]
    fn one_cell_per_registration_and_a_new_context_forgets_the_old_ones() {
        let r = Registrations::default();
        let a = r.cell(key(1, "f"));
        assert!(Arc::ptr_eq(&a, &r.cell(key(1, "f"))));
        assert!(!Arc::ptr_eq(&a, &r.cell(key(1, "g"))));
        r.cell(key(2, "f"));
        let cells = r.cells.lock().unwrap();
        assert_eq!(cells.len(), 1, "the old context's cells are gone");
        assert!(cells.contains_key(&key(2, "f")));
    }
}
