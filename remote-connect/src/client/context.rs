//! [`Context`]: a connection to a cluster, as TensorFlow's eager context after
//! `tf.config.experimental_connect_to_cluster`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use cluster_proto::DeviceAttributes;
use cluster_spec::ClusterSpec;
use device_filter::DeviceName;
use futures_util::future::BoxFuture;
use tokio::sync::{Mutex, broadcast};

use super::Registrations;
use super::close_connection::{close_all, detached};
use super::cluster_change::Moves;
use super::connection::{Connection, Live, Snapshot};
use super::events::{HealthBoard, TaskEvent, TaskHealth};
use super::releases::Releases;
use super::resolve::resolve;
use super::update::OnDiscoveryFailure;
use super::{
    ConnectOptions, ConnectTarget, Deadline, DeviceHandle, cluster, discovery, keep_alive, reset,
    update,
};
use crate::TaskId;
use crate::error::Error;

/// How [`Context::apply`] meets a connected context with a new cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// `connect_to_cluster`'s: TensorFlow's `remote.py` rule (an update only for the same
    /// cluster and local task); an update goes on past tasks that fail, as TensorFlow's.
    Connect,
    /// A follower's: TensorFlow's `update_server_def` whenever the local task and the jobs
    /// stay ([`cluster::same_jobs`]); an update whose new tasks cannot be discovered changes
    /// nothing.
    Follow,
}

/// A new cluster swapped in by [`Context::apply`].
pub(super) struct Applied {
    /// A new context (else the old one, updated in place).
    pub(super) reset: bool,
    pub(super) moves: Moves,
    /// Closes what was replaced (the old contexts, or the tasks an update let go) and then
    /// reports the update's failures.
    pub(super) closing: BoxFuture<'static, Result<(), Error>>,
}

/// A device as the context lists it (TensorFlow's `LogicalDevice`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogicalDevice {
    /// The full name, `/job:J/replica:0/task:T/device:TYPE:ID`.
    pub name: String,
    /// `CPU`, `GPU`, …
    pub device_type: String,
}

/// A connection to a TensorFlow cluster: `tf.config.experimental_connect_to_cluster` for
/// Rust. Cheap to clone (clones share the connection).
///
/// ```
/// use cluster_spec::ClusterSpec;
/// use remote_connect::{ConnectOptions, Context, TaskServer};
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A worker on a free port (a real `tf.distribute.Server` works the same way).
/// let placeholder = ClusterSpec::from_json(r#"{"worker": ["localhost:0"]}"#)?;
/// let worker = TaskServer::builder(placeholder, "worker", 0)
///     .with_bind("127.0.0.1:0".parse()?)
///     .start()
///     .await?;
/// let spec = ClusterSpec::builder()
///     .job("worker", [worker.local_addr().to_string()])
///     .build()?;
///
/// let ctx = Context::new();
/// ctx.connect_to_cluster(spec, ConnectOptions::default()).await?;
/// let names: Vec<String> = ctx.list_logical_devices().into_iter().map(|d| d.name).collect();
/// assert_eq!(names, [
///     "/device:CPU:0",
///     "/job:worker/replica:0/task:0/device:CPU:0",
/// ]);
/// assert_eq!(worker.contexts().len(), 1);
/// ctx.close().await?;
/// assert!(worker.contexts().is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Context {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The live connection, and the lock that serialises connects, updates and closes. It is
    /// held across a connect's or update's own RPCs (bounded by their `timeout`), never across
    /// closing an old cluster or stopping a server; readers ([`Context::check_alive`], ops,
    /// listings) read `snapshot` and never wait for it.
    connection: Mutex<Option<Live>>,
    snapshot: RwLock<Arc<Snapshot>>,
    health: Arc<HealthBoard>,
    /// Tensors dropped and not yet freed on their tasks.
    releases: Releases,
    /// Functions registered on remote tasks.
    registrations: Registrations,
    /// The last op id handed out; ids name kept outputs on the tasks.
    last_op_id: AtomicI64,
}

impl Context {
    /// A context connected to nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Connects to a cluster as `tf.config.experimental_connect_to_cluster` does: adds this
    /// process's job when missing (its server binds first, and the port it got is what the
    /// cluster advertises), discovers every remote task's devices, and creates a context on
    /// each with the devices its filters let it see.
    ///
    /// Connecting again with the same cluster, job and task updates the context in place
    /// (handles stay valid); anything else is a full reset (new context, old ones closed,
    /// older [`DeviceHandle`]s stale). A resolver whose master is `""` or `"local"` makes this
    /// a no-op.
    ///
    /// Returns within `options.timeout`; if any task fails, the error lists every failed task
    /// with its address and cause, and no context created by this call is left behind.
    ///
    /// Connects and updates are serialised; readers ([`check_alive`](Self::check_alive),
    /// listings, ops) never wait for one: they see the old cluster until the new one is
    /// swapped in whole. After a reset the old cluster's contexts are closed (and its local
    /// server stopped) without holding the context's lock.
    ///
    /// # Errors
    ///
    /// [`Error::Tasks`] when tasks fail, [`Error::MasterNotFound`],
    /// [`Error::LocalTaskMissing`], [`Error::Protocol`], or the resolver's or local server's
    /// error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe as to the context: dropping the future (in a `select!`, a timeout) leaves
    /// the context connected to either the old cluster or the new one, never a mix. Dropped
    /// before the swap, it is the old cluster; remote contexts this call already created or
    /// moved to the next view are not undone (a later update finds such tasks again; others
    /// expire after `keep_alive_secs`), and a local server it started stops. Dropped after
    /// the swap, it is the new cluster, and closing the old one (or, for an update, the tasks
    /// that left) goes on in the background.
    pub async fn connect_to_cluster<'a>(
        &self,
        target: impl Into<ConnectTarget<'a>>,
        options: ConnectOptions,
    ) -> Result<(), Error> {
        let Some((spec, default_device)) = resolve(target.into(), &options).await? else {
            return Ok(());
        };
        let applied = self
            .apply(spec, default_device, options, Rule::Connect)
            .await?;
        detached(applied.closing).await.unwrap_or(Ok(()))
    }

    /// Brings the context to `spec`, updating it in place or resetting it as `rule` decides,
    /// and swaps the new state in whole. The closing of what it replaced is returned, to run
    /// detached at once (nothing else runs it); see [`connect_to_cluster`](Self::connect_to_cluster)
    /// for cancel safety.
    pub(super) async fn apply(
        &self,
        spec: ClusterSpec,
        default_device: Option<String>,
        options: ConnectOptions,
        rule: Rule,
    ) -> Result<Applied, Error> {
        let mut guard = self.inner.connection.lock().await;
        let local = TaskId::new(options.job_name.clone(), options.task_index);
        let update = guard.as_ref().is_some_and(|live| {
            let c = &live.connection;
            match rule {
                Rule::Connect => {
                    cluster::is_update(c.blueprint.cluster(), &c.local.task, &spec, &local)
                }
                Rule::Follow => cluster::same_jobs(&c.spec, &c.local.task, &spec, &local),
            }
        });
        tracing::info!(
            decision = if update {
                "update in place"
            } else {
                "full reset"
            },
            reason = match (guard.as_ref(), rule) {
                (None, _) => "not connected yet",
                (Some(_), Rule::Connect) if update => "same cluster and local task",
                (Some(_), Rule::Connect) => {
                    "the cluster or the local task changed (TensorFlow's rule)"
                }
                (Some(_), Rule::Follow) if update => "same jobs and local task",
                (Some(_), Rule::Follow) => "a job or the local task changed",
            },
            "connect_to_cluster"
        );
        if update {
            let live = guard.as_mut().expect("checked above");
            let discovery = match rule {
                Rule::Connect => OnDiscoveryFailure::Continue,
                Rule::Follow => OnDiscoveryFailure::Abort,
            };
            let (mut next, closing, moves) =
                update::update(&live.connection, spec, &options, discovery).await?;
            if default_device.is_some() {
                next.default_device = default_device;
            }
            self.swap_in(live, next);
            return Ok(Applied {
                reset: false,
                moves,
                closing: Box::pin(closing.run()),
            });
        }
        let before = guard
            .as_ref()
            .map(|live| live.connection.addresses())
            .unwrap_or_default();
        let previous = guard
            .as_ref()
            .map(|live| (&live.connection.local, &live.connection.filters));
        let connection = reset::connect(spec, default_device, options, previous).await?;
        // From here to the swap nothing awaits: a dropped future sees old or new, whole.
        let moves = Moves::between(&before, &connection.addresses());
        self.inner.health.reset();
        let mut live = Live {
            connection,
            keep_alive: None,
        };
        self.install_keep_alive(&mut live);
        self.publish(Some(&live.connection));
        let mut old = guard.replace(live);
        // Its keep-alives stop with the swap, not when its closing starts.
        if let Some(handle) = old.as_mut().and_then(|old| old.keep_alive.take()) {
            handle.abort();
        }
        // As TensorFlow: the old contexts are closed after the new ones exist, and a task
        // that misses it collects the context after `keep_alive_secs`.
        let closing = async move {
            if let Some(old) = old {
                let _ = close_all(old).await;
            }
            Ok(())
        };
        Ok(Applied {
            reset: true,
            moves,
            closing: Box::pin(closing),
        })
    }

    /// Updates the connected context to `target`'s cluster in place, as TensorFlow's
    /// `context.update_server_def` (tasks may be added, removed or replaced; the local job and
    /// task must stay the same). Device handles stay valid.
    ///
    /// # Errors
    ///
    /// [`Error::NotConnected`] before a connect, [`Error::LocalTaskMissing`] if the local
    /// task changed, and [`Error::Tasks`] listing every task that failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe as to the context: the new state is built aside and swapped in whole, so a
    /// dropped future leaves the old cluster (at the old view) or the new one (at the next
    /// view), never a mix. Tasks already moved to the next view when it was dropped answer
    /// `KeepAlive` with that view; the next update treats them as replaced and gives them the
    /// context again, as TensorFlow does with a task that missed an update.
    pub async fn update_server_def<'a>(
        &self,
        target: impl Into<ConnectTarget<'a>>,
        options: ConnectOptions,
    ) -> Result<(), Error> {
        let Some((spec, _)) = resolve(target.into(), &options).await? else {
            return Ok(());
        };
        let mut guard = self.inner.connection.lock().await;
        let live = guard.as_mut().ok_or(Error::NotConnected)?;
        let local = &live.connection.local.task;
        if local.job != options.job_name || local.task != options.task_index {
            return Err(Error::LocalTaskMissing {
                job: options.job_name,
                task: options.task_index,
            });
        }
        let (next, closing, _) = update::update(
            &live.connection,
            spec,
            &options,
            OnDiscoveryFailure::Continue,
        )
        .await?;
        self.swap_in(live, next);
        drop(guard);
        detached(closing.run()).await.unwrap_or(Ok(()))
    }

    /// Every device of the cluster, this process's first: the master's own view, which
    /// device filters do not narrow (as in TensorFlow).
    pub fn list_logical_devices(&self) -> Vec<LogicalDevice> {
        let snapshot = self.snapshot();
        snapshot
            .devices
            .iter()
            .enumerate()
            .map(|(i, (name, a))| LogicalDevice {
                name: if i < snapshot.local_devices {
                    // TensorFlow lists its own devices without job, replica and task.
                    format!(
                        "/device:{}:{}",
                        name.device_type().unwrap_or_default(),
                        name.id().unwrap_or_default()
                    )
                } else {
                    a.name.clone()
                },
                device_type: a.device_type.clone(),
            })
            .collect()
    }

    /// The master's CPU when connected through a resolver with `make_master_device_default`
    /// (TensorFlow enters that device scope).
    pub fn default_device(&self) -> Option<String> {
        self.snapshot().default_device.clone()
    }

    /// A handle on device `name`: a full name in any spelling TensorFlow parses
    /// (`/job:worker/replica:0/task:0/cpu:0`), or `/device:TYPE:ID` for this process's own
    /// devices, as [`list_logical_devices`](Self::list_logical_devices) names them.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDevice`] when the cluster has no such device, [`Error::NotConnected`].
    pub fn device(&self, name: &str) -> Result<DeviceHandle, Error> {
        let snapshot = self.snapshot();
        if snapshot.context_id == 0 {
            return Err(Error::NotConnected);
        }
        let mut parsed: DeviceName = name
            .parse()
            .map_err(|_| Error::UnknownDevice(name.to_owned()))?;
        if let (None, None, None, Some(local)) = (
            parsed.job(),
            parsed.replica(),
            parsed.task(),
            &snapshot.local_task,
        ) {
            // `/device:CPU:0` is this process's, as in TensorFlow's listing.
            parsed = parsed
                .with_job(&local.job)
                .and_then(|n| n.with_replica(0))
                .and_then(|n| n.with_task(local.task))?;
        }
        snapshot
            .devices
            .iter()
            .find(|(n, _)| *n == parsed)
            .map(|(_, a)| DeviceHandle::new(a.name.clone(), snapshot.context_id))
            .ok_or_else(|| Error::UnknownDevice(name.to_owned()))
    }

    /// The device a handle names, if the handle is from the current context.
    ///
    /// # Errors
    ///
    /// [`Error::StaleDevice`] for a handle from before a full reconnect, or whose task an
    /// update removed.
    pub fn device_attributes(&self, handle: &DeviceHandle) -> Result<DeviceAttributes, Error> {
        self.snapshot().attributes(handle).cloned()
    }

    /// The devices remote task `task` was given (after its filters): all it may use.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTask`] when `task` is not a remote task of the cluster.
    pub fn visible_devices(&self, task: &TaskId) -> Result<Vec<String>, Error> {
        self.snapshot()
            .members
            .get(task)
            .map(|m| m.sent.to_vec())
            .ok_or_else(|| Error::UnknownTask(task.clone()))
    }

    /// Every remote task with its address, jobs sorted by name and tasks ascending.
    pub fn remote_tasks(&self) -> Vec<(TaskId, String)> {
        self.snapshot()
            .members
            .iter()
            .map(|(t, m)| (t.clone(), m.address.clone()))
            .collect()
    }

    /// The cluster as connected, this process's job included; `None` before a connect.
    pub fn cluster_spec(&self) -> Option<ClusterSpec> {
        self.snapshot().full_spec.clone()
    }

    /// The address the cluster advertises for this process's task.
    pub fn local_address(&self) -> Option<String> {
        self.snapshot().local_address.clone()
    }

    /// The remote context id (0 before a connect).
    pub fn context_id(&self) -> u64 {
        self.snapshot().context_id
    }

    /// The context's view id (0 after a full connect, +1 per update).
    pub fn context_view_id(&self) -> u64 {
        self.snapshot().view_id
    }

    /// Health changes of remote tasks, as keep-alives and [`check_alive`](Self::check_alive)
    /// find them: a task that stops answering, loses our context or restarts.
    pub fn subscribe(&self) -> broadcast::Receiver<TaskEvent> {
        self.inner.health.subscribe()
    }

    /// Asks task `task` now whether it is alive (TensorFlow's `context.check_alive`, which
    /// sends `GetStatus`), and whether it still holds our context: a changed device incarnation
    /// is a restarted task. The answer is also sent to subscribers if it changed.
    ///
    /// It asks about the cluster as last connected or updated, and never waits for a
    /// connect, update or close in progress.
    ///
    /// # Errors
    ///
    /// [`Error::NotConnected`], [`Error::UnknownTask`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing but the health it reports, which a dropped call does
    /// not report.
    pub async fn check_alive(&self, task: &TaskId) -> Result<TaskHealth, Error> {
        let snapshot = self.snapshot();
        if snapshot.context_id == 0 {
            return Err(Error::NotConnected);
        }
        let member = snapshot
            .members
            .get(task)
            .cloned()
            .ok_or_else(|| Error::UnknownTask(task.clone()))?;
        let (context_id, view_id, rpc_timeout) =
            (snapshot.context_id, snapshot.view_id, snapshot.rpc_timeout);
        drop(snapshot);
        let deadline = Deadline::new(rpc_timeout, rpc_timeout * 2, 2);
        let channel = &member.remote.channel;
        let mut status = discovery::status(&deadline, channel, task).await;
        if status.as_ref().is_err_and(keep_alive::connection_dropped) {
            // A restarted task closed our connection; the channel redials on the next call.
            status = discovery::status(&deadline, channel, task).await;
        }
        let health = match status {
            Err(error) => keep_alive::health_of(&error),
            Ok(devices) => {
                let before: Vec<u64> = member
                    .remote
                    .devices
                    .iter()
                    .map(|(_, a)| a.incarnation)
                    .collect();
                let now: Vec<u64> = devices.iter().map(|(_, a)| a.incarnation).collect();
                if before != now {
                    TaskHealth::Restarted
                } else {
                    keep_alive::probe(&deadline, channel, context_id, view_id).await
                }
            }
        };
        self.inner
            .health
            .report(task, &member.address, context_id, health.clone());
        Ok(health)
    }

    /// Closes every remote context and stops this process's task server. Afterwards the
    /// context is unconnected and may connect again.
    ///
    /// A connect or update in progress finishes first (within its `timeout`), and is then
    /// closed; the closing itself holds no lock.
    ///
    /// # Errors
    ///
    /// [`Error::Tasks`] listing tasks that could not be told (their contexts expire after
    /// `keep_alive_secs`).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped while waiting for a connect in progress, it changes nothing;
    /// dropped later, the context is already unconnected and the closing goes on in the
    /// background.
    pub async fn close(&self) -> Result<(), Error> {
        let old = {
            let mut guard = self.inner.connection.lock().await;
            let old = guard.take();
            self.publish(None);
            old
        };
        match old {
            Some(live) => detached(close_all(live)).await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }

    pub(super) fn releases(&self) -> &Releases {
        &self.inner.releases
    }

    pub(super) fn registrations(&self) -> &Registrations {
        &self.inner.registrations
    }

    pub(super) fn next_op_id(&self) -> i64 {
        self.inner.last_op_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(super) fn snapshot(&self) -> Arc<Snapshot> {
        self.inner
            .snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn publish(&self, connection: Option<&Connection>) {
        let snapshot = connection.map(Snapshot::of).unwrap_or_default();
        *self
            .inner
            .snapshot
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Arc::new(snapshot);
    }

    /// Makes `next` the live connection: keep-alives and readers switch to it at once.
    fn swap_in(&self, live: &mut Live, next: Connection) {
        live.connection = next;
        self.install_keep_alive(live);
        self.publish(Some(&live.connection));
    }

    fn install_keep_alive(&self, live: &mut Live) {
        if let Some(handle) = live.keep_alive.take() {
            handle.abort();
        }
        let c = &live.connection;
        if let Some(every) = keep_alive::period(c.options.keep_alive_secs) {
            live.keep_alive = Some(keep_alive::spawn(
                self.inner.health.clone(),
                c.context_id,
                c.view_id,
                c.links(),
                every,
                c.options.rpc_timeout,
            ));
        }
    }
}
