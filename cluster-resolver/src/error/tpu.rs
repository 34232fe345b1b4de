//! [`Error`]: why the Cloud TPU resolver cannot use a TPU node.

use cluster_spec::__private::quote::{excerpt, quote};

/// What the Cloud TPU resolver ([`TpuClusterResolver`](crate::TpuClusterResolver)) finds wrong
/// with the TPU it was given. A failed node lookup keeps the crate's network error as the
/// source of [`Error::Lookup`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No TPU was named and neither `KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS` nor `TPU_NAME` is set
    /// (TensorFlow's wording).
    #[error("Please provide a TPU Name to connect to.")]
    NameMissing,
    /// The Cloud TPU API lookup of a node failed (TensorFlow's wording, whose `Exception: `
    /// the [`source`](std::error::Error::source) completes when the chain is shown, as by
    /// [`Chain`](cluster_spec::__private::error_chain::Chain)).
    #[error(
        "Could not lookup TPU metadata from name '{}'. Please doublecheck the tpu argument in the TPUClusterResolver constructor. Exception",
        excerpt(.tpu, 0)
    )]
    Lookup {
        /// The TPU name.
        tpu: String,
        /// Why the lookup failed.
        #[source]
        source: Box<crate::Error>,
    },
    /// The TPU node is not in state `READY` (TensorFlow's wording).
    #[error(
        "TPU \"{}\" is not yet ready; state: \"{}\"",
        excerpt(.tpu, 0),
        excerpt(.state, 0)
    )]
    NotReady {
        /// The TPU name.
        tpu: String,
        /// Its state, e.g. `CREATING`, `PREEMPTED`.
        state: String,
    },
    /// The TPU node is not `HEALTHY`, and the resolver was asked to require health.
    #[error(
        "TPU \"{}\" is not healthy; health: \"{}\"",
        excerpt(.tpu, 0),
        excerpt(.health, 0)
    )]
    Unhealthy {
        /// The TPU name.
        tpu: String,
        /// Its health, e.g. `UNHEALTHY_MAINTENANCE` (`HEALTH_UNSPECIFIED` when absent).
        health: String,
    },
    /// The TPU job has no task to be the master (TensorFlow's wording, plus the job).
    #[error(
        "No TPUs with the specified names exist. (job '{}' has no tasks)",
        excerpt(.job, 0)
    )]
    NoTpus {
        /// The job that has no tasks.
        job: String,
    },
    /// A TPU node's `acceleratorType` gives no per-host core count.
    #[error(
        "TPU \"{}\" has accelerator type {}: {reason}",
        excerpt(.tpu, 0),
        quote(.accelerator_type, 0)
    )]
    AcceleratorType {
        /// The TPU name.
        tpu: String,
        /// The accelerator type, e.g. `v3-8`.
        accelerator_type: String,
        /// Why no core count follows from it.
        reason: String,
    },
}
