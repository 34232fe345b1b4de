//! [`Error`]: why a node's GPUs cannot be found or shared out among its tasks.

use cluster_spec::__private::quote::{excerpt, quote};

/// Why [`gpus`](crate::gpus) cannot say which GPUs a node has, or cannot give each of the
/// node's tasks as many as asked. The Slurm resolver and the `launcher`'s GPU share both fail with it
/// (wrapped in the crate's [`Error::Gpus`](crate::Error::Gpus)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node has fewer GPUs than its tasks ask for (TensorFlow's wording first).
    #[error(
        "Requested more GPUs per node than available. ({tasks_per_node} tasks on a node × \
         {gpus_per_task} GPUs per task > {gpus_per_node} GPUs per node)"
    )]
    NotEnoughGpus {
        /// GPUs of a node.
        gpus_per_node: u32,
        /// The most tasks on one node.
        tasks_per_node: u32,
        /// GPUs asked for each task.
        gpus_per_task: u32,
    },
    /// `gpus_per_node` is more than `CUDA_VISIBLE_DEVICES` makes visible.
    #[error(
        "gpus_per_node {gpus_per_node} is more than the {count} GPUs \
         CUDA_VISIBLE_DEVICES={} makes visible",
        quote(.visible, 0)
    )]
    GpusNotVisible {
        /// The `gpus_per_node` option.
        gpus_per_node: u32,
        /// `CUDA_VISIBLE_DEVICES`.
        visible: String,
        /// The number of devices it lists.
        count: usize,
    },
    /// `gpus_per_node` or `nvidia-smi` gives a node more than `gpus::MAX_GPUS_PER_NODE` GPUs.
    #[error("{origin} gives {count} GPUs per node, more than the {max} a node may have")]
    TooManyGpus {
        /// The number of GPUs.
        count: u32,
        /// Where it came from: `gpus_per_node` or `nvidia-smi --list-gpus`.
        origin: String,
        /// The limit, `gpus::MAX_GPUS_PER_NODE`.
        max: u32,
    },
    /// `nvidia-smi` could not be started (other than not being installed).
    #[error(
        "cannot run {} --list-gpus to count GPUs",
        excerpt(.program, 0)
    )]
    NvidiaSmiStart {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `nvidia-smi --list-gpus` failed (TensorFlow's wording).
    #[error(
        "Could not get number of GPUs from nvidia-smi. Maybe it is missing?\nOutput: {} ({status})",
        excerpt(.output, 0)
    )]
    NvidiaSmiFailed {
        /// Its exit status.
        status: String,
        /// What it printed.
        output: String,
    },
    /// `nvidia-smi --list-gpus` ran past its deadline and was killed.
    #[error(
        "{} --list-gpus did not answer within {timeout:?}; set CUDA_VISIBLE_DEVICES (or \
         gpus_per_node) to not ask it",
        excerpt(.program, 0)
    )]
    NvidiaSmiTimeout {
        /// The program.
        program: String,
        /// The deadline.
        timeout: std::time::Duration,
    },
    /// `nvidia-smi --query-gpu` printed a line that is not the CSV asked for.
    #[error("cannot read the GPUs {} --query-gpu lists: {reason}", excerpt(.program, 0))]
    NvidiaSmiOutput {
        /// The program.
        program: String,
        /// Which line, and what it holds.
        reason: String,
    },
    /// NVML was loaded but a call failed.
    #[error("NVML's {call} failed")]
    Nvml {
        /// The NVML function, e.g. `nvmlDeviceGetMemoryInfo`.
        call: &'static str,
        /// NVML's error.
        #[source]
        source: NvmlError,
    },
    /// A GPU source (NVML, `nvidia-smi`) did not answer before its deadline; the query is
    /// left to finish on its own thread.
    #[error(
        "{} did not answer within {timeout:?}; set CUDA_VISIBLE_DEVICES (or gpus_per_node) to \
         not ask it",
        excerpt(.what, 0)
    )]
    Timeout {
        /// What was asked: `NVML (or nvidia-smi)`, `nvidia-smi --query-gpu`, …
        what: String,
        /// The deadline.
        timeout: std::time::Duration,
    },
    /// No thread could be started to ask the GPU source.
    #[error("cannot start a thread to find the GPUs")]
    Thread(#[source] std::io::Error),
}

/// What NVML said when a call failed: its words, and its cause below (a library that did not
/// load, ...). Its own type stays out of this crate's API, so an NVML binding update is no
/// breaking change here.
#[derive(Debug)]
pub struct NvmlError(pub(crate) nvml_wrapper::error::NvmlError);

impl std::fmt::Display for NvmlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for NvmlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
