//! [`TaskServer`]: building, starting and stopping one task's server.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_proto::ServerDef;
use cluster_proto::worker_service_server::WorkerServiceServer;
use cluster_spec::ClusterSpec;
use grpc_guard::{Access, Guard, Serving};
use tokio::task::JoinHandle;
use tonic::service::Routes;

use super::ServerError;
use super::contexts::{ContextInfo, Contexts};
use super::eager_routes::EagerRoutes;
use super::identity::Identity;
use super::limits::{Limits, MAX_MESSAGE_SIZE};
use super::metrics::TaskServerMetrics;
use super::state::TaskState;
use super::worker_service::Worker;
use crate::devices::{self, LocalDevice};
use crate::ids::random_nonzero_u64;

/// How long GPU discovery (`nvidia-smi`) may take when a server starts.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// How often idle contexts are looked for (TensorFlow's `EagerServiceContextGC`: every second).
const GC_INTERVAL: Duration = Duration::from_secs(1);

/// One task of a TensorFlow cluster, serving what `tf.config.experimental_connect_to_cluster`
/// needs of it: `/tensorflow.WorkerService/GetStatus` (device discovery) and the
/// `/tensorflow.eager.EagerService` context methods (`CreateContext`, `UpdateContext`,
/// `KeepAlive`, `CloseContext`), with TensorFlow's semantics. Methods that run operations
/// answer `UNIMPLEMENTED` at once.
///
/// ```
/// use cluster_spec::ClusterSpec;
/// use remote_connect::TaskServer;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222"]}"#)?;
/// let server = TaskServer::builder(spec, "worker", 0)
///     .with_bind("127.0.0.1:0".parse()?)   // port 0: the OS picks; local_addr() tells
///     .start()
///     .await?;
/// assert_ne!(server.local_addr().port(), 0);
/// assert_eq!(server.devices()[0], "/job:worker/replica:0/task:0/device:CPU:0");
/// server.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TaskServer;

impl TaskServer {
    /// A server for task `task` of job `job` in `spec`; checked when it starts.
    pub fn builder(spec: ClusterSpec, job: &str, task: u32) -> TaskServerBuilder {
        TaskServerBuilder {
            spec,
            job: job.to_owned(),
            task,
            port: None,
            devices: None,
            bind: None,
            routes: None,
            gc_interval: GC_INTERVAL,
            access: Access::default(),
            limits: Limits::default(),
            metrics: TaskServerMetrics::default(),
        }
    }

    /// A server for the task a TensorFlow `ServerDef` names (`cluster`, `job_name`,
    /// `task_index`, and `port` when non-zero, as `tf.distribute.Server` reads them).
    ///
    /// # Errors
    ///
    /// [`ServerError::InvalidServerDef`] for a negative task index, port or replica, and
    /// [`ServerError::Spec`] for an invalid cluster.
    pub fn from_server_def(def: &ServerDef) -> Result<TaskServerBuilder, ServerError> {
        let invalid = |reason: String| ServerError::InvalidServerDef { reason };
        let task = u32::try_from(def.task_index)
            .map_err(|_| invalid(format!("task_index {} is negative", def.task_index)))?;
        let port = u16::try_from(def.port)
            .map_err(|_| invalid(format!("port {} is not 0..=65535", def.port)))?;
        if def.protocol != "grpc" && !def.protocol.is_empty() {
            return Err(invalid(format!(
                "protocol {} is not supported: only \"grpc\"",
                cluster_spec::__private::quote::quote(&def.protocol, 0)
            )));
        }
        let spec = ClusterSpec::try_from(def.cluster.clone().unwrap_or_default())?;
        let mut builder = Self::builder(spec, &def.job_name, task);
        builder.port = (port != 0).then_some(port);
        Ok(builder)
    }
}

/// Configures a [`TaskServer`] before it starts.
#[derive(Debug)]
#[must_use = "a builder does nothing until start() is awaited"]
pub struct TaskServerBuilder {
    spec: ClusterSpec,
    job: String,
    task: u32,
    port: Option<u16>,
    devices: Option<Vec<LocalDevice>>,
    bind: Option<SocketAddr>,
    routes: Option<Routes>,
    gc_interval: Duration,
    access: Access,
    limits: Limits,
    metrics: TaskServerMetrics,
}

impl TaskServerBuilder {
    /// Serve exactly these devices instead of discovering the host's (`CPU:0` plus NVIDIA
    /// GPUs, [`devices::discover`]). Names are checked when the server starts.
    pub fn with_devices(mut self, devices: Vec<LocalDevice>) -> Self {
        self.devices = Some(devices);
        self
    }

    /// Listen on `addr` instead of `0.0.0.0:<the port of this task's address>` (what a
    /// `tf.distribute.Server` binds). Port 0 lets the OS pick a free port, with no race:
    /// [`RunningServer::local_addr`] tells which.
    pub fn with_bind(mut self, addr: SocketAddr) -> Self {
        self.bind = Some(addr);
        self
    }

    /// Serve these tonic services on the same port too (`Routes::new(svc).add_service(..)`);
    /// requests for other services than TensorFlow's go to them.
    pub fn with_routes(mut self, routes: Routes) -> Self {
        self.routes = Some(routes);
        self
    }

    /// How often contexts idle past their `keep_alive_secs` are collected (default 1 s, as
    /// TensorFlow).
    pub fn with_gc_interval(mut self, interval: Duration) -> Self {
        self.gc_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Who may connect ([`Access::with_allow`]: addresses or CIDR networks; any other peer's
    /// connection is closed as soon as it is accepted, before TLS or HTTP/2, and logged) and
    /// whether over mTLS ([`Access::with_tls`], feature `tls`: TensorFlow's clients speak
    /// plaintext only, so they cannot connect to such a server). Default: every peer,
    /// plaintext.
    ///
    /// ```
    /// # use cluster_spec::ClusterSpec;
    /// # use remote_connect::{Access, Network, TaskServer};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222"]}"#)?;
    /// let networks = ["127.0.0.0/8", "192.0.2.0/24", "::1"]
    ///     .into_iter()
    ///     .map(str::parse::<Network>)
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let builder = TaskServer::builder(spec, "worker", 0)
    ///     .with_access(Access::default().with_allow(networks));
    /// # Ok(()) }
    /// ```
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// What the server lets its clients hold before it refuses them: streams, connections,
    /// request memory, contexts ([`Limits`]; default [`Limits::default`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Count the server's contexts, connections and refusals into `metrics`
    /// ([`TaskServerMetrics`], registered into a `prometheus_client` registry by the
    /// caller). Default: counted into metrics no registry holds.
    ///
    /// ```
    /// # use cluster_spec::ClusterSpec;
    /// # use remote_connect::{TaskServer, TaskServerMetrics};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222"]}"#)?;
    /// let metrics = TaskServerMetrics::default();
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// metrics.register(&mut registry);
    /// let builder = TaskServer::builder(spec, "worker", 0).with_metrics(metrics);
    /// # Ok(()) }
    /// ```
    pub fn with_metrics(mut self, metrics: TaskServerMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Binds the port and starts serving; returns once the server accepts connections.
    ///
    /// # Errors
    ///
    /// The job or task is not in the spec, a device name is invalid or repeated, GPU
    /// discovery failed, or the address cannot be bound.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: its only wait, GPU discovery (whose `nvidia-smi` is killed with it),
    /// comes before the bind, so a dropped start has bound nothing.
    pub async fn start(mut self) -> Result<RunningServer, ServerError> {
        let address = self.spec.task_address(&self.job, self.task)?.to_owned();
        let devices = match self.devices.take() {
            Some(devices) => devices,
            None => devices::discover(DISCOVERY_TIMEOUT).await?,
        };
        let task: Arc<str> = format!("/job:{}/replica:0/task:{}", self.job, self.task).into();
        let guard = self.guard(task.clone());
        let (state, routes) = self.services(devices, &guard)?;
        let addr = match self.bind {
            Some(addr) => addr,
            None => {
                let port = match self.port {
                    Some(port) => port,
                    None => port_of(&address),
                };
                SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))
            }
        };
        let listener = bind(addr)?;
        let serving = guard.serve(listener, routes).map_err(|e| match e {
            #[cfg(feature = "tls")]
            grpc_guard::ServeError::Tls(source) => ServerError::Tls(source),
            grpc_guard::ServeError::Listener(source) => ServerError::Bind { addr, source },
            // ServeError is non-exhaustive: a new cause is a bind failure of this address.
            other => ServerError::Bind {
                addr,
                source: std::io::Error::other(other),
            },
        })?;
        let local_addr = serving.local_addr();
        let gc = tokio::spawn(collect_idle(Arc::downgrade(&state), self.gc_interval));
        tracing::debug!(%task, %local_addr, "TaskServer serving");
        Ok(RunningServer {
            state,
            serving: Some(serving),
            gc,
        })
    }

    /// The services a started server answers with, without a port, a runtime or idle-context
    /// collection: the fuzz targets (`fuzz-targets`) drive requests through these real
    /// handlers in-process, as `tower` services, with no socket in the way. Uses the devices
    /// given with [`with_devices`](Self::with_devices), or `CPU:0` alone (no GPU discovery). They are
    /// called on a tokio runtime with its timer enabled (each request has a deadline). Not a
    /// stable API.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start), less discovery and binding.
    #[doc(hidden)]
    pub fn into_routes(mut self) -> Result<Routes, ServerError> {
        self.spec.task_address(&self.job, self.task)?;
        let devices = self
            .devices
            .take()
            .unwrap_or_else(|| vec![LocalDevice::cpu()]);
        let guard = self.guard("in-process".into());
        Ok(self.services(devices, &guard)?.1)
    }

    /// The guard this task's server faces the network with, logging as `task`.
    fn guard(&self, task: Arc<str>) -> Guard {
        Guard::new("TaskServer", task, self.limits.serving().clone())
            .with_metrics(self.metrics.guard().clone())
            .with_access(self.access.clone())
    }

    /// Checks `devices` and builds the state and services of this task, guarded by `guard`.
    fn services(
        &mut self,
        devices: Vec<LocalDevice>,
        guard: &Guard,
    ) -> Result<(Arc<TaskState>, Routes), ServerError> {
        devices::check_unique(&devices)?;
        for device in &devices {
            device.name(&self.job, 0, self.task)?;
        }
        let incarnations = devices.iter().map(|_| random_nonzero_u64()).collect();
        let state = Arc::new(TaskState {
            own: Identity {
                job: self.job.clone(),
                replica: 0,
                task: self.task,
            },
            devices,
            incarnations,
            contexts: Contexts::new(&self.limits, self.metrics.clone()),
        });
        let routes = self
            .routes
            .take()
            .unwrap_or_default()
            .add_service(
                guard
                    .service(
                        WorkerServiceServer::new(Worker(state.clone()))
                            .max_decoding_message_size(MAX_MESSAGE_SIZE)
                            .max_encoding_message_size(MAX_MESSAGE_SIZE),
                        MAX_MESSAGE_SIZE,
                    )
                    .inflating(),
            )
            .add_service(
                guard
                    .service(
                        EagerRoutes::new(state.clone(), guard.request_memory().clone()),
                        MAX_MESSAGE_SIZE,
                    )
                    .inflating(),
            );
        Ok((state, routes))
    }
}

/// The port of a `host:port` address (already validated by the spec).
pub(crate) fn port_of(address: &str) -> u16 {
    address
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or(0)
}

fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServerError> {
    let bind_error = |source| ServerError::Bind { addr, source };
    let listener = std::net::TcpListener::bind(addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    tokio::net::TcpListener::from_std(listener).map_err(bind_error)
}

/// Drops contexts idle past their keep-alive until the server is gone.
async fn collect_idle(state: std::sync::Weak<TaskState>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else { return };
        let dropped = state.contexts.collect_idle(Instant::now());
        if dropped > 0 {
            tracing::info!(dropped, "collected idle remote contexts");
        }
    }
}

/// How long [`RunningServer::shutdown`] lets requests in flight finish before it closes their
/// connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A started [`TaskServer`]. Dropping it stops serving without waiting; call
/// [`shutdown`](Self::shutdown) to wait until in-flight requests finished (within a grace
/// period) and the port is free.
#[derive(Debug)]
pub struct RunningServer {
    state: Arc<TaskState>,
    /// `None` once shut down.
    serving: Option<Serving>,
    gc: JoinHandle<()>,
}

impl std::fmt::Debug for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskState")
            .field("own", &self.own)
            .field("devices", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl RunningServer {
    /// The address the server listens on (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.serving().local_addr()
    }

    fn serving(&self) -> &Serving {
        self.serving
            .as_ref()
            .expect("a RunningServer serves until it is consumed")
    }

    /// The full names of the devices this server reports in GetStatus (under the job and task
    /// it was started as).
    pub fn devices(&self) -> Vec<String> {
        self.state
            .own_attributes()
            .into_iter()
            .map(|a| a.name)
            .collect()
    }

    /// The devices as TensorFlow's `DeviceAttributes`, as GetStatus sends them.
    pub fn device_attributes(&self) -> Vec<cluster_proto::DeviceAttributes> {
        self.state.own_attributes()
    }

    /// How many connections the server holds open: admitted ones, and ones still waiting for
    /// their first bytes ([`Limits::with_max_connections`] counts these).
    pub fn open_connections(&self) -> usize {
        self.serving().open_connections()
    }

    /// Every live remote context, by id.
    pub fn contexts(&self) -> Vec<ContextInfo> {
        self.state.contexts.snapshot()
    }

    /// The full name of device `name` as context `context_id` knows it. A device the context
    /// was not given (hidden by the client's device filters, or nonexistent) is
    /// [`ServerError::UnknownDevice`], as in TensorFlow.
    ///
    /// # Errors
    ///
    /// [`ServerError::UnknownContext`] or [`ServerError::UnknownDevice`].
    pub fn lookup_device(&self, context_id: u64, name: &str) -> Result<String, ServerError> {
        self.state.contexts.lookup_device(context_id, name)
    }

    /// Stops accepting connections (the port is closed at once), lets in-flight requests
    /// finish for up to [`SHUTDOWN_GRACE`], then closes the connections still open, and
    /// returns once every connection is closed: within about `SHUTDOWN_GRACE` + 1 s
    /// whatever the clients do. [`shutdown_within`](Self::shutdown_within) sets the grace.
    ///
    /// # Errors
    ///
    /// [`ServerError::Serve`] if the server had failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the server stops once the future is first polled (or dropped, as any
    /// `RunningServer`), and a dropped future only stops the waiting: the connections are
    /// then closed by their clients or their idle timeout, not at the end of the grace.
    pub async fn shutdown(self) -> Result<(), ServerError> {
        self.shutdown_within(SHUTDOWN_GRACE).await
    }

    /// [`shutdown`](Self::shutdown) with a grace period of `grace` for requests in flight
    /// (`Duration::ZERO` closes every connection at once).
    ///
    /// # Errors
    ///
    /// [`ServerError::Serve`] if the server had failed.
    ///
    /// # Cancel safety
    ///
    /// As [`shutdown`](Self::shutdown).
    pub async fn shutdown_within(mut self, grace: Duration) -> Result<(), ServerError> {
        self.gc.abort();
        let Some(serving) = self.serving.take() else {
            return Ok(());
        };
        serving
            .shutdown_within(grace)
            .await
            .map_err(ServerError::Serve)
    }
}

impl Drop for RunningServer {
    /// Stops serving without waiting (dropping the [`Serving`] stops it).
    fn drop(&mut self) {
        self.gc.abort();
    }
}

#[cfg(test)]
mod tests {
    use cluster_proto::ServerDef;
    use cluster_spec::ClusterSpec;

    use super::TaskServer;
    use crate::ServerError;

    fn def(task_index: i32, port: i32, protocol: &str) -> ServerDef {
        let spec = ClusterSpec::from_json(r#"{"worker": ["w0:2222", "w1:2222"]}"#).unwrap();
        ServerDef {
            cluster: Some(spec.as_cluster_def()),
            job_name: "worker".to_owned(),
            task_index,
            port,
            protocol: protocol.to_owned(),
            ..ServerDef::default()
        }
    }

    #[test]
    fn a_server_def_names_the_task_and_its_port_as_tensorflow_reads_it() {
        let builder = TaskServer::from_server_def(&def(1, 0, "grpc")).unwrap();
        assert_eq!((builder.job.as_str(), builder.task), ("worker", 1));
        assert_eq!(builder.port, None);
        let builder = TaskServer::from_server_def(&def(0, 2345, "")).unwrap();
        assert_eq!((builder.task, builder.port), (0, Some(2345)));
    }

    #[test]
    fn an_unusable_server_def_says_which_field() {
        for (bad, field) in [
            (def(-1, 0, "grpc"), "task_index -1"),
            (def(0, 70_000, "grpc"), "port 70000"),
            (def(0, 0, "rdma"), "protocol \"rdma\""),
        ] {
            let Err(ServerError::InvalidServerDef { reason }) = TaskServer::from_server_def(&bad)
            else {
                panic!("{bad:?} accepted");
            };
            assert!(reason.starts_with(field), "{reason}");
        }
    }
}
