//! Task health as the client sees it, and the events that report its changes.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::broadcast;

use crate::TaskId;

/// How a remote task stands, as the last keep-alive or [`check_alive`](crate::Context::check_alive)
/// found it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskHealth {
    /// It answers and holds our context at the current view.
    Alive,
    /// It does not answer (down, partitioned, or frozen past the RPC deadline).
    Unreachable {
        /// Why, as the transport or deadline reported it.
        cause: String,
    },
    /// It answers but has no context of ours (`ABORTED`): it was restarted, or collected the
    /// context after missed keep-alives.
    ContextLost,
    /// It answers with device incarnations other than those discovered: a new process on
    /// the same address.
    Restarted,
    /// It holds our context at another view id than ours.
    StaleView {
        /// The view id it reported.
        view_id: u64,
    },
}

/// A change of a task's health, sent to every [`subscribe`](crate::Context::subscribe)r.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskEvent {
    /// The task.
    pub task: TaskId,
    /// Its address.
    pub address: String,
    /// The context the observation was made in.
    pub context_id: u64,
    /// Its new health.
    pub health: TaskHealth,
}

/// The last health of every task, and the channel changes go out on.
#[derive(Debug)]
pub(crate) struct HealthBoard {
    last: Mutex<HashMap<TaskId, TaskHealth>>,
    events: broadcast::Sender<TaskEvent>,
}

impl Default for HealthBoard {
    fn default() -> Self {
        Self {
            last: Mutex::default(),
            events: broadcast::channel(1024).0,
        }
    }
}

impl HealthBoard {
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<TaskEvent> {
        self.events.subscribe()
    }

    /// Records `health`; sends an event when it differs from the last one recorded (a task
    /// first seen alive sends none).
    pub(crate) fn report(&self, task: &TaskId, address: &str, context_id: u64, health: TaskHealth) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let previous = last.insert(task.clone(), health.clone());
        let changed = match &previous {
            None => health != TaskHealth::Alive,
            Some(previous) => *previous != health,
        };
        if changed {
            if health == TaskHealth::Alive {
                tracing::info!(%task, address, "remote task healthy again");
            } else {
                tracing::warn!(%task, address, ?health, "remote task health changed");
            }
            // No subscriber is fine: the change is still recorded.
            let _ = self.events.send(TaskEvent {
                task: task.clone(),
                address: address.to_owned(),
                context_id,
                health,
            });
        }
    }

    /// Forgets every task (a new context starts from scratch).
    pub(crate) fn reset(&self) {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
