//! The crate's error: the failures every resolver shares, and each area's own error type
//! wrapped whole.
//!
//! An area's error lives here, one file each, and its module re-exports it under its own name
//! (`hostlist::ParseError`, `slurm::Error`, ...), so this module depends on nothing above it.

pub(crate) mod cluster_file;
pub(crate) mod gpus;
pub(crate) mod hostlist;
pub(crate) mod k8s_indexed;
#[cfg(feature = "kubernetes")]
pub(crate) mod kubernetes;
pub(crate) mod multi_worker;
pub(crate) mod slurm;
pub(crate) mod tasks_per_node_list;
#[cfg(feature = "gce")]
pub(crate) mod tpu;
pub(crate) mod union;
#[cfg(feature = "watch")]
pub(crate) mod watch;

use std::fmt::Write as _;

use cluster_spec::__private::error_chain::Chain;
use cluster_spec::__private::quote::{excerpt, quote};

use crate::cluster_source::ClusterSource;
use cluster_file::Error as ClusterFileError;
use gpus::Error as GpusError;
use hostlist::ParseError;
use k8s_indexed::Error as K8sIndexedError;
#[cfg(feature = "kubernetes")]
use kubernetes::Error as KubernetesError;
use multi_worker::Error as MultiWorkerError;
use slurm::Error as SlurmError;
use tasks_per_node_list::TasksPerNodeError;
#[cfg(feature = "gce")]
use tpu::Error as TpuError;
use union::Error as UnionError;
#[cfg(feature = "watch")]
use watch::Error as WatchError;

/// Everything that can go wrong in this crate.
///
/// Failures every resolver can meet are variants here; each area's own failures are its error
/// type, wrapped whole and printed as it prints itself ([`hostlist::ParseError`](ParseError),
/// [`slurm::Error`](SlurmError), ...), so a caller of one area matches that area's type.
/// Every message quotes the offending input (shortened around the problem when it is long)
/// and, where a position is meaningful, the byte offset into that input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- Shared by every resolver ----
    /// A cluster spec built from the source is invalid, or a lookup in it failed.
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// A required environment variable is not set.
    #[error("environment variable {name} is not set")]
    MissingVariable {
        /// The variable.
        name: String,
    },
    /// An environment variable is set, but its value is not UTF-8.
    #[error("environment variable {variable} is set but is not valid UTF-8")]
    NotUnicode {
        /// The variable.
        variable: String,
    },
    /// An environment variable holds a value the resolver cannot use.
    #[error(
        "environment variable {name}={} is invalid: {reason}",
        quote(.value, 0)
    )]
    InvalidVariable {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    // ---- Each area's own error, printed as it prints itself ----
    /// A Slurm hostlist does not parse.
    #[error(transparent)]
    Hostlist(#[from] ParseError),
    /// A Slurm tasks-per-node list does not parse.
    #[error(transparent)]
    TasksPerNode(#[from] TasksPerNodeError),
    /// The Slurm step cannot be made a cluster.
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    /// A Kubernetes Indexed Job's (or JobSet's) pod environment cannot be made a cluster.
    #[error(transparent)]
    K8sIndexed(#[from] K8sIndexedError),
    /// A node's GPUs cannot be found, or cannot be shared out among its tasks.
    #[error(transparent)]
    Gpus(#[from] GpusError),
    /// A cluster or task breaks TensorFlow's chief / evaluator rules.
    #[error(transparent)]
    MultiWorker(#[from] MultiWorkerError),
    /// A union of resolvers cannot be built or merged.
    #[error(transparent)]
    Union(#[from] UnionError),
    /// The Kubernetes client cannot be configured, or the selected pods cannot be tasks.
    #[cfg(feature = "kubernetes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "kubernetes")))]
    #[error(transparent)]
    Kubernetes(#[from] KubernetesError),
    /// The Cloud TPU is missing, not ready or not usable.
    #[cfg(feature = "gce")]
    #[cfg_attr(docsrs, doc(cfg(feature = "gce")))]
    #[error(transparent)]
    Tpu(#[from] TpuError),
    /// A watch cannot read or follow its source this time (reported, then watching goes on).
    #[cfg(feature = "watch")]
    #[cfg_attr(docsrs, doc(cfg(feature = "watch")))]
    #[error(transparent)]
    Watch(#[from] WatchError),

    // ---- TF_CONFIG and SageMaker (`TfConfigClusterResolver`, `SageMakerClusterResolver`) ----
    /// An environment variable holding JSON (`TF_CONFIG`, `SM_HOSTS`) is not valid JSON, or a
    /// key in it has a value of the wrong type or range.
    #[error(
        "environment variable {name} is invalid at line {line}, column {column}: {message}: {}",
        quote(.value, *.pos)
    )]
    InvalidJsonVariable {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in bytes) of the problem.
        column: usize,
        /// Byte offset of the problem in `value`.
        pos: usize,
        /// What is wrong, naming the key and the value found.
        message: String,
    },
    /// A cluster file's `TF_CONFIG` document is invalid.
    #[error(transparent)]
    ClusterFile(#[from] ClusterFileError),
    /// `master()` needs a task, but neither the caller nor TF_CONFIG gives its type or index.
    #[error("master() needs a task: no {field} was given and TF_CONFIG has none")]
    TfConfigNoTask {
        /// The missing key, `task.type` or `task.index`.
        field: &'static str,
    },

    // ---- Auto-detection (`auto_detect`) ----
    /// No source of cluster information is complete; says what each one lacks.
    #[error("no cluster found: {}", describe_checked(.checked))]
    NoClusterFound {
        /// Each source checked, in order, and what it lacks.
        checked: Vec<(ClusterSource, String)>,
    },

    // ---- Network resolvers (Kubernetes, GCE, TPU) ----
    /// A call to a cluster API did not finish within its deadline.
    #[error("{operation} timed out after {timeout:?}")]
    Timeout {
        /// What was called, e.g. `GET https://…/instances/vm-1` or `listing pods in namespace "ml"`.
        operation: String,
        /// The deadline that passed.
        timeout: std::time::Duration,
    },
    /// A call to a cluster API failed before an answer arrived (connection, TLS, protocol, or
    /// an error reported by the API client); why is the [`source`](std::error::Error::source).
    #[error("{operation} failed")]
    Request {
        /// What was called.
        operation: String,
        /// Why it failed: the client's own error (`kube::Error`, hyper's, ...), with its causes.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An HTTP API answered with an error status.
    #[error("{operation} returned HTTP {status}: {}", excerpt(.message, 0))]
    HttpStatus {
        /// What was called.
        operation: String,
        /// The HTTP status code.
        status: u16,
        /// The API's error message (Google's `error.message`), else the start of the body.
        message: String,
    },
    /// An API answered with a document the resolver cannot use.
    #[error("{operation} returned an invalid response: {reason}")]
    InvalidResponse {
        /// What was called.
        operation: String,
        /// What is wrong with the answer.
        reason: String,
    },
    /// Several independent calls failed; every failure is listed, not only the first, each
    /// with its causes (so this error has no single [`source`](std::error::Error::source)).
    #[error("{} calls failed: {}", .errors.len(), join_errors(.errors))]
    Multiple {
        /// Each failure.
        errors: Vec<Error>,
    },

    // ---- Google Compute Engine (`GceClusterResolver`) ----
    /// An instance of the group has no first network interface with an IP.
    #[error(
        "instance \"{}\" of instance group \"{}\" has no networkInterfaces[0].networkIP",
        excerpt(.instance, 0),
        excerpt(.group, 0)
    )]
    InstanceWithoutIp {
        /// The instance group.
        group: String,
        /// The instance.
        instance: String,
    },
}

/// `TF_CONFIG: not set; Slurm: ...`, for [`Error::NoClusterFound`].
fn describe_checked(checked: &[(ClusterSource, String)]) -> String {
    let parts: Vec<String> = checked
        .iter()
        .map(|(source, reason)| format!("{source}: {reason}"))
        .collect();
    parts.join("; ")
}

/// `a; b; c` for the errors of [`Error::Multiple`].
fn join_errors(errors: &[Error]) -> String {
    let mut out = String::new();
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{}", Chain(e));
    }
    out
}
