//! [`ConnectOptions`]: TensorFlow's `connect_to_cluster` arguments, plus the deadlines and
//! limits TensorFlow lacks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use device_filter::ClusterDeviceFilters;

use crate::error::Stage;

/// How [`Context::connect_to_cluster`](crate::Context::connect_to_cluster) connects.
///
/// Set with the `with_*` methods. The first five mirror
/// `tf.config.experimental_connect_to_cluster`'s arguments and default the same way; the rest
/// bound what TensorFlow leaves unbounded (it waits forever for a task that is down).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The job of this process in the cluster (TensorFlow: `job_name="localhost"`). Added to
    /// the cluster with one task when the cluster has no such job.
    pub(crate) job_name: String,
    /// This process's task index in `job_name` (TensorFlow: `task_index=0`).
    pub(crate) task_index: u32,
    /// The RPC layer; only `"grpc"` exists (TensorFlow: `protocol=None` → `"grpc"`).
    pub(crate) protocol: String,
    /// With a resolver as target, make its master's CPU the default device (TensorFlow:
    /// `make_master_device_default=True`).
    pub(crate) make_master_device_default: bool,
    /// Which devices each remote task may see (TensorFlow: `cluster_device_filters`); only
    /// read on a full (re)connect, as in TensorFlow.
    pub(crate) cluster_device_filters: Option<ClusterDeviceFilters>,
    /// Deadline of each RPC, dial included (TensorFlow: none).
    pub(crate) rpc_timeout: Duration,
    /// Deadline of the whole connect or update (TensorFlow: none).
    pub(crate) timeout: Duration,
    /// At most this many RPCs in flight at once across all tasks.
    pub(crate) max_in_flight: usize,
    /// Seconds a remote context lives without requests; the context sends `KeepAlive` every
    /// half of it (TensorFlow: 600). 0 = contexts are never collected and no keep-alive runs.
    pub(crate) keep_alive_secs: u64,
    /// Where this process's own task server listens. Default: `127.0.0.1:0` when the local
    /// job is added (advertised as `localhost:<port>`, as TensorFlow does), else
    /// `0.0.0.0:<port of the local task's address>`.
    pub(crate) local_bind: Option<SocketAddr>,
    /// TLS with this process's client certificate to every task, each server checked against
    /// the CA and the host of its address; this process's own task server requires client
    /// certificates too (default: plaintext, which TensorFlow's servers speak). A reconnect
    /// that keeps the local task keeps its server, and the TLS it started with.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub(crate) tls: Option<crate::TlsConfig>,
    /// Told how a connect advances: `(stage, tasks done, tasks in the stage)` after each task
    /// answers or fails (for progress bars).
    pub(crate) progress: Option<Progress>,
}

/// A progress callback given to [`ConnectOptions::with_progress`].
#[derive(Clone)]
pub(crate) struct Progress(Arc<dyn Fn(Stage, usize, usize) + Send + Sync>);

impl Progress {
    pub(crate) fn report(&self, stage: Stage, done: usize, total: usize) {
        (self.0)(stage, done, total);
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            job_name: "localhost".to_owned(),
            task_index: 0,
            protocol: "grpc".to_owned(),
            make_master_device_default: true,
            cluster_device_filters: None,
            rpc_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_in_flight: 1024,
            keep_alive_secs: 600,
            local_bind: None,
            #[cfg(feature = "tls")]
            tls: None,
            progress: None,
        }
    }
}

impl ConnectOptions {
    /// The job of this process in the cluster (TensorFlow: `job_name="localhost"`). Added to
    /// the cluster with one task when the cluster has no such job.
    pub fn with_job_name(mut self, job: impl Into<String>) -> Self {
        self.job_name = job.into();
        self
    }

    /// This process's task index in its job (TensorFlow: `task_index=0`).
    pub fn with_task_index(mut self, task: u32) -> Self {
        self.task_index = task;
        self
    }

    /// The RPC layer; only `"grpc"` exists (TensorFlow: `protocol=None` → `"grpc"`).
    pub fn with_protocol(mut self, protocol: impl Into<String>) -> Self {
        self.protocol = protocol.into();
        self
    }

    /// With a resolver as target, make its master's CPU the default device (TensorFlow:
    /// `make_master_device_default=True`).
    pub fn with_make_master_device_default(mut self, yes: bool) -> Self {
        self.make_master_device_default = yes;
        self
    }

    /// Which devices each remote task may see (TensorFlow: `cluster_device_filters`); only
    /// read on a full (re)connect, as in TensorFlow. Default: every device.
    pub fn with_cluster_device_filters(mut self, filters: ClusterDeviceFilters) -> Self {
        self.cluster_device_filters = Some(filters);
        self
    }

    /// Deadline of each RPC, dial included (TensorFlow: none). Default 10 s.
    pub fn with_rpc_timeout(mut self, timeout: Duration) -> Self {
        self.rpc_timeout = timeout;
        self
    }

    /// Deadline of the whole connect or update (TensorFlow: none). Default 30 s.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// At most `n` RPCs in flight at once across all tasks (at least 1; default 1,024): what
    /// bounds the sockets and memory a connect to thousands of tasks holds at once.
    pub fn with_max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Seconds a remote context lives without requests; the context sends `KeepAlive` every
    /// half of it (TensorFlow: 600). 0 = contexts are never collected and no keep-alive runs.
    pub fn with_keep_alive_secs(mut self, secs: u64) -> Self {
        self.keep_alive_secs = secs;
        self
    }

    /// Where this process's own task server listens: one interface rather than all of them,
    /// for a host on several networks. Default: `127.0.0.1:0` when the local job is added
    /// (advertised as `localhost:<port>`, as TensorFlow does), else
    /// `0.0.0.0:<port of the local task's address>`.
    pub fn with_local_bind(mut self, addr: SocketAddr) -> Self {
        self.local_bind = Some(addr);
        self
    }

    /// TLS with this process's client certificate to every task, each server checked against
    /// the CA and the host of its address; this process's own task server requires client
    /// certificates too (default: plaintext, which TensorFlow's servers speak). A reconnect
    /// that keeps the local task keeps its server, and the TLS it started with.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_tls(mut self, config: crate::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Told how a connect advances: `(stage, tasks done, tasks in the stage)` after each task
    /// answers or fails (for progress bars).
    pub fn with_progress(
        mut self,
        report: impl Fn(Stage, usize, usize) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Progress(Arc::new(report)));
        self
    }
}
