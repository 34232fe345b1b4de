//! Keeping remote contexts alive (TensorFlow's `EagerKeepAliveThread`: `KeepAlive` to every
//! task each `max(1, keep_alive_secs / 2)` seconds), and turning the answers into health.

use std::sync::Arc;
use std::time::Duration;

use cluster_proto::eager::KeepAliveRequest;
use tokio::task::JoinHandle;

use super::connection::TaskLink;
use super::events::{HealthBoard, TaskHealth};
use super::{Deadline, TaskChannel};
use crate::error::TaskError;
use crate::ids::Hex;

/// `KeepAlive` once; what its answer says of the task.
pub(crate) async fn probe(
    deadline: &Deadline,
    channel: &TaskChannel,
    context_id: u64,
    view_id: u64,
) -> TaskHealth {
    let call = || {
        let mut eager = channel.eager.clone();
        async move {
            deadline
                .run(
                    "KeepAlive",
                    eager.keep_alive(KeepAliveRequest { context_id }),
                )
                .await
        }
    };
    let mut result = call().await;
    if result.as_ref().is_err_and(connection_dropped) {
        result = call().await;
    }
    match result {
        Ok(response) if response.context_view_id == view_id => TaskHealth::Alive,
        Ok(response) => TaskHealth::StaleView {
            view_id: response.context_view_id,
        },
        Err(error) => health_of(&error),
    }
}

/// Whether `error` may only mean that the channel's connection had dropped (the task closed
/// it, e.g. when it restarted): tonic fails the first call on such a channel with `CANCELLED`
/// or `UNAVAILABLE` and reconnects for the next, so the call is worth repeating once.
pub(crate) fn connection_dropped(error: &TaskError) -> bool {
    matches!(
        error,
        TaskError::Rpc { status, .. }
            if matches!(status.code(), tonic::Code::Cancelled | tonic::Code::Unavailable)
    )
}

/// The health an RPC error shows.
pub(crate) fn health_of(error: &TaskError) -> TaskHealth {
    match error {
        TaskError::Rpc { status, .. } if status.code() == tonic::Code::Aborted => {
            TaskHealth::ContextLost
        }
        other => TaskHealth::Unreachable {
            cause: cluster_spec::__private::error_chain::Chain(other).to_string(),
        },
    }
}

/// The keep-alive period for `keep_alive_secs` (TensorFlow: half, at least one second);
/// `None` for 0 (contexts never expire).
pub(crate) fn period(keep_alive_secs: u64) -> Option<Duration> {
    (keep_alive_secs > 0).then(|| Duration::from_secs((keep_alive_secs / 2).max(1)))
}

/// Sends `KeepAlive` to every task each `every`, reporting health changes to `board`, until
/// the handle is aborted.
pub(crate) fn spawn(
    board: Arc<HealthBoard>,
    context_id: u64,
    view_id: u64,
    tasks: Vec<TaskLink>,
    every: Duration,
    rpc_timeout: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let deadline = Deadline::new(rpc_timeout, rpc_timeout, tasks.len().max(1));
            let mut set = tokio::task::JoinSet::new();
            for link in &tasks {
                let TaskLink {
                    task,
                    address,
                    channel,
                } = link.clone();
                let deadline = deadline.clone();
                let board = board.clone();
                set.spawn(async move {
                    let health = probe(&deadline, &channel, context_id, view_id).await;
                    tracing::trace!(%task, address, ?health, "keep-alive answered");
                    let alive = health == TaskHealth::Alive;
                    board.report(&task, &address, context_id, health);
                    alive
                });
            }
            let mut alive = 0;
            while let Some(joined) = set.join_next().await {
                alive += usize::from(joined.unwrap_or(false));
            }
            tracing::debug!(
                context_id = %Hex(context_id),
                tasks = tasks.len(),
                alive,
                "keep-alive round"
            );
        }
    })
}
