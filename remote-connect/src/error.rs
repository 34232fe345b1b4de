//! Errors of connecting to a cluster and using its devices: [`Error`], and
//! [`TaskFailure`]/[`TaskError`] for what went wrong with one task.

use std::fmt;
use std::time::Duration;

use cluster_spec::__private::error_chain::Chain;

use crate::TaskId;
use crate::server::ServerError;

/// What went wrong with one task during a connect, update, close or health check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No connection could be made (refused, unreachable, name not resolved, …); the
    /// transport's reason is the [`source`](std::error::Error::source).
    #[error("cannot connect")]
    Connect {
        /// The transport error.
        #[source]
        source: tonic::transport::Error,
    },
    /// Under TLS, the first RPC failed because the connection closed right after the TLS
    /// handshake: what a server does when it refuses this client's certificate (TLS 1.3
    /// finishes the client's side of the handshake before the server checks the certificate,
    /// so the refusal arrives as a closed connection).
    #[error(
        "{method} failed: the connection closed right after the TLS handshake; the task \
         likely refused this client's certificate (not signed by its CA): {code:?}: {message}",
        code = .status.code(), message = .status.message()
    )]
    TlsRefused {
        /// The RPC.
        method: &'static str,
        /// The status the transport reported (its code and message are in this error's
        /// text, so it is no [`source`](std::error::Error::source)).
        status: tonic::Status,
    },
    /// The first RPC failed because the server closed the connection before answering: what
    /// a server does at accept when its allow list or its connection limit refuses this
    /// client (a tfcluster TaskServer says which in its `GOAWAY`, shown here), or a task that
    /// went away.
    #[error(
        "{method} failed: the server closed the connection before answering (refused at \
         accept by an allow list or a connection limit, or the task went away): {reason}"
    )]
    Closed {
        /// The RPC.
        method: &'static str,
        /// The transport's reason, with its causes (the server's own words when it gave any):
        /// the status's causes, shown once here since the status is no
        /// [`source`](std::error::Error::source).
        reason: String,
        /// The status the transport reported.
        status: tonic::Status,
    },
    /// The task did not answer within the deadline (down, frozen, or overloaded).
    #[error("{method}: no answer within {timeout:?}")]
    Timeout {
        /// The RPC that timed out (`GetStatus`, `CreateContext`, …).
        method: &'static str,
        /// The deadline it had.
        timeout: Duration,
    },
    /// The task answered with an error status.
    #[error("{method} failed: {code:?}: {message}", code = .status.code(), message = .status.message())]
    Rpc {
        /// The RPC.
        method: &'static str,
        /// The status the task returned: its answer, whose code and message are this error's
        /// text (no [`source`](std::error::Error::source): tonic's `Status` prints them again,
        /// and its own cause in debug form).
        status: tonic::Status,
    },
    /// The task reported a device name TensorFlow cannot parse (a TensorFlow client would
    /// abort the process on it).
    #[error("reported an invalid device name")]
    InvalidDevice {
        /// The parser's error, naming the value.
        #[source]
        source: device_filter::Error,
    },
    /// The task reported a device name without a device type and id.
    #[error("reported device {}, which names no device type and id", cluster_spec::__private::quote::quote(.name, 0))]
    IncompleteDevice {
        /// The name as reported.
        name: String,
    },
    /// The task reported one device name twice (TensorFlow's wording).
    #[error(
        "Trying to add device {name} to manager but its name conflicts with an existing device."
    )]
    DuplicateDevice {
        /// The repeated name, after renaming to the task.
        name: String,
    },
}

/// One task that failed, with its address and cause.
#[derive(Debug)]
#[non_exhaustive]
pub struct TaskFailure {
    /// The task.
    pub task: TaskId,
    /// The address dialled.
    pub address: String,
    /// What went wrong.
    pub error: TaskError,
}

/// `task at address: what went wrong: its causes`: a line of [`Error::Tasks`], whole.
impl fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {}: {}",
            self.task,
            self.address,
            Chain(&self.error)
        )
    }
}

/// What made a [`DeviceHandle`](crate::DeviceHandle) stale, for [`Error::StaleDevice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Staleness {
    /// A full reconnect replaced the context the handle was made in.
    Reset,
    /// An update removed the device's task from the cluster.
    TaskRemoved,
}

fn stale_device(name: &str, handle: u64, current: u64, cause: Staleness) -> String {
    match cause {
        Staleness::Reset => format!(
            "device {name} belongs to remote context {handle:#018x}, which a later \
             connect_to_cluster replaced with {current:#018x}: handles from before a full \
             reconnect are stale"
        ),
        Staleness::TaskRemoved => format!(
            "device {name} was removed from remote context {current:#018x} by an update of \
             the cluster: its task left"
        ),
    }
}

/// The step of connecting that failed, for [`Error::Tasks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Device discovery (`GetStatus`).
    Discovery,
    /// Creating remote contexts (`CreateContext`).
    CreateContext,
    /// Updating remote contexts (`KeepAlive`, `GetStatus`, `CreateContext`, `UpdateContext`).
    Update,
    /// Closing remote contexts (`CloseContext`).
    Close,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Discovery => "device discovery",
            Stage::CreateContext => "creating remote contexts",
            Stage::Update => "updating the cluster",
            Stage::Close => "closing remote contexts",
        })
    }
}

/// Every failure of `remote-connect`'s client side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An invalid cluster (from a spec or a resolver).
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// The resolver could not produce the cluster or the master.
    #[error(transparent)]
    Resolver(#[from] cluster_resolver::Error),
    /// Invalid device filters or device name.
    #[error(transparent)]
    DeviceFilter(#[from] device_filter::Error),
    /// The local task's server could not start; why is the
    /// [`source`](std::error::Error::source).
    #[error("the local task's server")]
    Server(#[from] ServerError),
    /// Some tasks failed; every one of them is listed, not only the first, each with its
    /// causes (so this error has no single [`source`](std::error::Error::source)).
    #[error("{stage} failed for {} of {total} tasks:{}", failures.len(), list(failures))]
    Tasks {
        /// The step that failed.
        stage: Stage,
        /// How many tasks the step involved.
        total: usize,
        /// Every task that failed.
        failures: Vec<TaskFailure>,
    },
    /// The local task is not in its job (TensorFlow's wording).
    #[error("Task {task} was not defined in job \"{job}\"")]
    LocalTaskMissing {
        /// The local job.
        job: String,
        /// The local task index.
        task: u32,
    },
    /// A protocol other than `grpc`.
    #[error("protocol {} is not supported: only \"grpc\"", cluster_spec::__private::quote::quote(.0, 0))]
    Protocol(String),
    /// No task's address matches the resolver's master (TensorFlow's wording).
    #[error(
        "`make_master_device_default` is set to True but cannot find master {0} in the cluster"
    )]
    MasterNotFound(String),
    /// No device of that name in the context (TensorFlow's wording).
    #[error("{0} unknown device.")]
    UnknownDevice(String),
    /// A device handle the cluster moved on from: made before a full reconnect, or naming a
    /// device whose task an update removed.
    #[error("{}", stale_device(name, *handle_context, *current_context, *cause))]
    StaleDevice {
        /// The device's name.
        name: String,
        /// The context the handle was made in.
        handle_context: u64,
        /// The context now.
        current_context: u64,
        /// What made it stale.
        cause: Staleness,
    },
    /// The operation needs a connected context.
    #[error("the context is not connected to a cluster")]
    NotConnected,
    /// The task is not a remote task of the connected cluster.
    #[error("{0} is not a remote task of the connected cluster")]
    UnknownTask(TaskId),
    /// A task refused or failed ops, or could not be reached to run them; the context stays
    /// usable.
    #[error(transparent)]
    Op(Box<OpFailure>),
    /// A remote tensor from before a full reconnect, or one already released.
    #[error(
        "tensor {op_id}:{output} on {device} belongs to remote context {tensor_context:#018x}, \
         and the context is now {current_context:#018x}: tensors from before a full reconnect \
         or released are stale"
    )]
    StaleTensor {
        /// The device that held it.
        device: String,
        /// The op that produced it.
        op_id: i64,
        /// Which output of that op.
        output: i32,
        /// The context it was made in.
        tensor_context: u64,
        /// The context now.
        current_context: u64,
    },
    /// One of this process's own devices: its task server discovers and serves contexts but
    /// runs no ops.
    #[error("{0} is this process's own device, and remote-connect runs ops only on remote tasks")]
    LocalDevice(String),
    /// A value that cannot be sent or read.
    #[error(transparent)]
    Tensor(#[from] crate::TensorError),
    /// A function that cannot be read, or a call that does not fit its signature; found
    /// before anything was sent.
    #[error(transparent)]
    Function(#[from] crate::FunctionError),
    /// A task answered in a way TensorFlow's protocol does not allow.
    #[error("unexpected response: {0}")]
    BadResponse(String),
}

/// Ops a task refused or failed, or could not be reached to run; what went wrong is the
/// [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[error("{} on {task} at {address}", op_list(ops))]
#[non_exhaustive]
pub struct OpFailure {
    /// The task.
    pub task: TaskId,
    /// Its address.
    pub address: String,
    /// The ops sent in the failed Enqueue, in order (empty for a release alone).
    pub ops: Vec<String>,
    /// What went wrong: [`TaskError::Rpc`] carries TensorFlow's status code and message.
    #[source]
    pub error: TaskError,
}

impl OpFailure {
    /// TensorFlow's status, when the task answered with one (`NOT_FOUND` for an unknown op,
    /// `INVALID_ARGUMENT` for a bad attribute, a shape mismatch or an `unknown device`).
    pub fn status(&self) -> Option<&tonic::Status> {
        match &self.error {
            TaskError::Rpc { status, .. } => Some(status),
            _ => None,
        }
    }
}

/// `AddV2` or `3 ops (MatMul, Mul, Sum)`.
fn op_list(ops: &[String]) -> String {
    match ops {
        [] => "releasing tensors".into(),
        [one] => one.clone(),
        many => format!("{} ops ({})", many.len(), many.join(", ")),
    }
}

fn list(failures: &[TaskFailure]) -> String {
    failures.iter().map(|f| format!("\n  {f}")).collect()
}
