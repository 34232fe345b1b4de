//! Closing remote contexts (`CloseContext`), for `close()`, after a full reconnect, for tasks
//! an update removed, and to leave nothing behind when a connect fails half way.

use cluster_proto::eager::CloseContextRequest;

use super::connection::TaskLink;
use super::fan_out::fan_out;
use super::{Deadline, TaskChannel};
use crate::error::TaskFailure;
use crate::ids::Hex;

/// `CloseContext(context_id, view_id)` on every task, concurrently; every failure is returned.
pub(crate) async fn close_contexts(
    deadline: &Deadline,
    context_id: u64,
    view_id: u64,
    tasks: Vec<TaskLink>,
) -> Vec<TaskFailure> {
    let started = tokio::time::Instant::now();
    let total = tasks.len();
    let tasks = tasks.into_iter().map(TaskLink::into_item).collect();
    let (_, failures) = fan_out(tasks, |_, _, channel: TaskChannel| {
        let deadline = deadline.clone();
        async move {
            let mut eager = channel.eager;
            deadline
                .run(
                    "CloseContext",
                    eager.close_context(CloseContextRequest {
                        context_id,
                        context_view_id: view_id,
                    }),
                )
                .await
        }
    })
    .await;
    tracing::debug!(
        context_id = %Hex(context_id),
        view_id,
        tasks = total,
        failed = failures.len(),
        elapsed = ?started.elapsed(),
        "remote contexts closed"
    );
    failures
}
