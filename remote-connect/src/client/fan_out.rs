//! Running one step on many tasks at once and keeping every failure.

use std::future::Future;

use cluster_spec::__private::error_chain::Chain;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::TaskId;
use crate::error::{TaskError, TaskFailure};

/// Runs `step` for every `(task, address, input)` concurrently (each on the runtime's worker
/// threads); returns the successes in input order and every failure.
pub(crate) async fn fan_out<I, T, F, Fut>(
    items: Vec<(TaskId, String, I)>,
    step: F,
) -> (Vec<(TaskId, String, T)>, Vec<TaskFailure>)
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(TaskId, String, I) -> Fut,
    Fut: Future<Output = Result<T, TaskError>> + Send + 'static,
{
    fan_out_reporting(items, step, |_, _| {}).await
}

/// [`fan_out`], calling `report(done, total)` each time a task's step ends.
pub(crate) async fn fan_out_reporting<I, T, F, Fut>(
    items: Vec<(TaskId, String, I)>,
    step: F,
    report: impl Fn(usize, usize),
) -> (Vec<(TaskId, String, T)>, Vec<TaskFailure>)
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(TaskId, String, I) -> Fut,
    Fut: Future<Output = Result<T, TaskError>> + Send + 'static,
{
    let mut set = JoinSet::new();
    let mut names = Vec::with_capacity(items.len());
    for (position, (task, address, input)) in items.into_iter().enumerate() {
        // Each task's RPCs log (at trace) under its task and address.
        let span = tracing::debug_span!("task", %task, %address);
        names.push((task.clone(), address.clone()));
        let work = step(task, address, input);
        set.spawn(async move { (position, work.await) }.instrument(span));
    }
    let mut results: Vec<Option<Result<T, TaskError>>> = (0..names.len()).map(|_| None).collect();
    let total = names.len();
    let mut done = 0;
    while let Some(joined) = set.join_next().await {
        // Steps do not panic; if one did, its slot stays empty and is reported below.
        if let Ok((position, result)) = joined {
            results[position] = Some(result);
        }
        done += 1;
        report(done, total);
    }
    let mut done = Vec::new();
    let mut failures = Vec::new();
    for ((task, address), result) in names.into_iter().zip(results) {
        match result {
            Some(Ok(value)) => done.push((task, address, value)),
            Some(Err(error)) => {
                let cause = Chain(&error);
                tracing::debug!(%task, %address, error = %cause, "task failed");
                failures.push(TaskFailure {
                    task,
                    address,
                    error,
                });
            }
            None => failures.push(TaskFailure {
                task,
                address,
                error: TaskError::Rpc {
                    method: "internal",
                    status: tonic::Status::internal("the task's step panicked"),
                },
            }),
        }
    }
    (done, failures)
}
