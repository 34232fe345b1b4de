//! [`Follow`]: a context that follows its cluster as it changes, applying each new membership
//! with TensorFlow's update path and publishing what each change did.

use std::error::Error as StdError;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster_resolver::Backoff;
use cluster_spec::ClusterSpec;
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};
use tracing::Instrument;

use super::close_connection::detached;
use super::cluster;
use super::cluster_change::ClusterChange;
use super::context::{Applied, Rule};
use super::{ConnectOptions, Context};
use crate::error::Error;

/// How a [`Follow`] applies changes; set with the `with_*` methods.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FollowOptions {
    /// How each change connects.
    connect: ConnectOptions,
    /// The first pause before a failed change is tried again.
    retry_first: Duration,
    /// The longest pause between tries of a failed change.
    retry_max: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            connect: ConnectOptions::default(),
            retry_first: Duration::from_millis(250),
            retry_max: Duration::from_secs(30),
        }
    }
}

impl FollowOptions {
    /// Options that connect with `connect`, retrying as by default.
    pub fn new(connect: ConnectOptions) -> Self {
        Self::default().with_connect(connect)
    }

    /// How each change connects: the local job and task, deadlines, filters (read at the
    /// first connect and at resets only, as in TensorFlow). Default
    /// [`ConnectOptions::default`].
    pub fn with_connect(mut self, connect: ConnectOptions) -> Self {
        self.connect = connect;
        self
    }

    /// How a failed change is tried again: after `first`, then pauses doubling up to `max`
    /// (default 250 ms, doubling to 30 s). A new change from the source is tried at once.
    pub fn with_retry(mut self, first: Duration, max: Duration) -> Self {
        self.retry_first = first;
        self.retry_max = max;
        self
    }
}

/// What a [`Follow`] reports on [`subscribe`](Follow::subscribe).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum FollowEvent {
    /// A change applied: the context serves the new cluster.
    Changed(ClusterChange),
    /// A change failed. Unless it was swapped in with some task missing (then `missing`
    /// names them), the context is still on its last good cluster, whole. It is tried again
    /// after `retry_in`, or at once when the source reports another change; `retry_in` is
    /// `None` when nothing is left to retry (only closing what it replaced failed).
    Failed {
        /// Every task that failed, with its address and cause.
        error: Arc<Error>,
        /// Tasks of the new cluster the context does not hold (their `CreateContext` failed
        /// after the rest were updated).
        missing: Vec<crate::TaskId>,
        /// When it is tried again.
        retry_in: Option<Duration>,
    },
    /// The source reported an error it recovers from (a malformed file version, a failed
    /// poll): that version is skipped and the context is unchanged.
    Source(Arc<dyn StdError + Send + Sync>),
}

/// A [`Context`] following a changing cluster, made by [`Context::follow`]. Dropping it (or
/// [`stop`](Self::stop)) stops following; the context stays connected as it is.
#[derive(Debug)]
pub struct Follow {
    task: JoinHandle<()>,
    events: broadcast::Sender<FollowEvent>,
    /// Subscribed before following started, so the first subscriber misses nothing.
    first: Mutex<Option<broadcast::Receiver<FollowEvent>>>,
}

impl Follow {
    /// The changes as they are applied. The first receiver handed out has every event since
    /// following started; later ones have those after they subscribed. A receiver that falls
    /// more than 1024 events behind loses the oldest (`RecvError::Lagged`).
    pub fn subscribe(&self) -> broadcast::Receiver<FollowEvent> {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner()).take();
        first.unwrap_or_else(|| self.events.subscribe())
    }

    /// Whether following ended: the source's stream ended (a watch never does).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops following and waits until it has: no change is applied after this returns. A
    /// change in progress is dropped as [`Context::connect_to_cluster`]'s cancel safety says.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Context {
    /// Follows a changing cluster: connects to the first spec `changes` yields (when not
    /// connected yet), then applies each later one, and publishes what each did on
    /// [`Follow::subscribe`]. Any stream of specs works: a resolver's watch
    /// (`cluster_resolver::watch`), a rendezvous' rounds, a channel.
    ///
    /// Each change is applied with TensorFlow's update path (`update_server_def`): tasks
    /// added get `CreateContext`, the others `UpdateContext`, removed ones `CloseContext`;
    /// handles and tensors on unchanged tasks keep working, and handles on removed or
    /// replaced tasks answer [`Error::StaleDevice`]. A change that adds, removes or renames
    /// a job, or moves the local task, is a full reset instead (as TensorFlow's rule:
    /// every task's job list changes), and its event says so.
    ///
    /// A change whose new tasks cannot be discovered (unreachable, down) changes nothing:
    /// the context stays on its last good cluster, the failure is published, and the change
    /// is tried again after a back-off, or at once when the source changes again. A spec
    /// equal to the current cluster is no change. Specs that arrive while a change is
    /// applied are coalesced: only the latest is applied next.
    ///
    /// Must be called inside a tokio runtime: following runs on a task of its own.
    ///
    /// # Cancel safety
    ///
    /// Dropping the [`Follow`] stops it at once, mid-change too: the change is dropped as
    /// [`connect_to_cluster`](Self::connect_to_cluster)'s cancel safety says, so the context
    /// is left on the old cluster or the new one, never a mix, and closing what a swapped-in
    /// change replaced goes on in the background.
    pub fn follow<S, E>(&self, changes: S, options: FollowOptions) -> Follow
    where
        S: Stream<Item = Result<ClusterSpec, E>> + Send + 'static,
        E: Into<Box<dyn StdError + Send + Sync>> + Send + 'static,
    {
        let (events, first) = broadcast::channel(1024);
        let follower = Follower {
            context: self.clone(),
            events: events.clone(),
            backoff: Backoff::new(options.retry_first, options.retry_max),
            options: options.connect,
        };
        let task = tokio::spawn(
            follower
                .run(changes)
                .instrument(tracing::info_span!("follow")),
        );
        Follow {
            task,
            events,
            first: Mutex::new(Some(first)),
        }
    }

    /// The remote tasks of the current cluster the context holds no context on.
    fn missing_tasks(&self) -> Vec<crate::TaskId> {
        let snapshot = self.snapshot();
        let (Some(spec), Some(local)) = (&snapshot.full_spec, &snapshot.local_task) else {
            return Vec::new();
        };
        cluster::remote_tasks(spec, local)
            .into_iter()
            .map(|(task, _)| task)
            .filter(|task| !snapshot.members.contains_key(task))
            .collect()
    }
}

/// The loop behind a [`Follow`].
struct Follower {
    context: Context,
    events: broadcast::Sender<FollowEvent>,
    backoff: Backoff,
    options: ConnectOptions,
}

/// A change waiting to be applied.
struct Pending {
    spec: ClusterSpec,
    /// Apply it even if it equals the current cluster (a retry of one swapped in with tasks
    /// missing).
    force: bool,
    /// Not before this (a retry's back-off).
    at: Option<Instant>,
}

impl Follower {
    async fn run<S, E>(mut self, changes: S)
    where
        S: Stream<Item = Result<ClusterSpec, E>>,
        E: Into<Box<dyn StdError + Send + Sync>> + Send,
    {
        // Fused: the drain below may see the stream's end, and the loop polls it again after.
        let mut changes = pin!(changes.fuse());
        let mut pending: Option<Pending> = None;
        loop {
            let retry_at = pending.as_ref().and_then(|p| p.at);
            let item = match retry_at {
                Some(at) => tokio::select! {
                    item = changes.next() => Some(item),
                    () = sleep_until(at) => None,
                },
                None => Some(changes.next().await),
            };
            if let Some(item) = item {
                let Some(item) = item else {
                    tracing::debug!("the source ended; following stops");
                    return;
                };
                // Whatever else is already waiting: only the latest good spec matters.
                let mut latest = self.take(item);
                while let Some(Some(item)) = changes.next().now_or_never() {
                    latest = self.take(item).or(latest);
                }
                if let Some(spec) = latest {
                    self.backoff.reset();
                    pending = Some(Pending {
                        spec,
                        force: false,
                        at: None,
                    });
                }
            }
            match pending.take() {
                Some(change) if change.at.is_none_or(|at| at <= Instant::now()) => {
                    pending = self.apply(change).await;
                }
                waiting => pending = waiting,
            }
        }
    }

    /// The spec of a source item; an error is published and skipped.
    fn take<E>(&self, item: Result<ClusterSpec, E>) -> Option<ClusterSpec>
    where
        E: Into<Box<dyn StdError + Send + Sync>>,
    {
        match item {
            Ok(spec) => Some(spec),
            Err(error) => {
                let error: Arc<dyn StdError + Send + Sync> = Arc::from(error.into());
                tracing::warn!(%error, "the cluster's source reported an error; skipped");
                let _ = self.events.send(FollowEvent::Source(error));
                None
            }
        }
    }

    /// Applies `change`; returns it again, with a back-off, when it must be retried.
    async fn apply(&mut self, change: Pending) -> Option<Pending> {
        let snapshot = self.context.snapshot();
        if !change.force && snapshot.spec.as_ref() == Some(&change.spec) {
            return None;
        }
        drop(snapshot);
        let applied = self
            .context
            .apply(
                change.spec.clone(),
                None,
                self.options.clone(),
                Rule::Follow,
            )
            .await;
        let (error, missing) = match applied {
            Ok(Applied {
                reset,
                moves,
                closing,
            }) => {
                let snapshot = self.context.snapshot();
                let event = ClusterChange {
                    added: moves.added,
                    removed: moves.removed,
                    replaced: moves.replaced,
                    reset,
                    devices: snapshot.devices.len(),
                    context_id: snapshot.context_id,
                    view_id: snapshot.view_id,
                };
                drop(snapshot);
                tracing::info!(
                    added = ?event.added,
                    removed = ?event.removed,
                    replaced = ?event.replaced,
                    reset,
                    devices = event.devices,
                    "followed a change of the cluster"
                );
                let _ = self.events.send(FollowEvent::Changed(event));
                // On its own task: dropping the follower does not stop it.
                match detached(closing).await.unwrap_or(Ok(())) {
                    Ok(()) => return None,
                    Err(error) => (error, self.context.missing_tasks()),
                }
            }
            Err(error) => (error, Vec::new()),
        };
        // Retried when nothing was applied, or when tasks are missing; failures closing
        // what was let go are only reported.
        let retry =
            self.context.snapshot().spec.as_ref() != Some(&change.spec) || !missing.is_empty();
        let retry_in = retry.then(|| self.backoff.pause(Duration::MAX));
        let error_chain = cluster_spec::__private::error_chain::Chain(&error);
        match retry_in {
            Some(pause) => tracing::warn!(
                error = %error_chain,
                ?missing,
                "a change of the cluster failed; trying again in {pause:?}"
            ),
            None => {
                tracing::warn!(error = %error_chain, "a change of the cluster was applied, with failures")
            }
        }
        let _ = self.events.send(FollowEvent::Failed {
            error: Arc::new(error),
            missing: missing.clone(),
            retry_in,
        });
        retry_in.map(|pause| Pending {
            spec: change.spec,
            force: !missing.is_empty(),
            at: Some(Instant::now() + pause),
        })
    }
}
