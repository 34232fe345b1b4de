//! # cluster-spec — TensorFlow's `ClusterSpec`, valid by construction
//!
//! A TensorFlow cluster is a set of *jobs* (`"worker"`, `"ps"`, `"chief"`, …), each a set of
//! *tasks* numbered from 0, each task reachable at a `host:port` address. [`ClusterSpec`] is
//! that model with the semantics of `tf.train.ClusterSpec`: dense and sparse jobs, the
//! TF_CONFIG JSON shape, conversion to and from the `ClusterDef` proto that goes on the wire,
//! TensorFlow's `repr` and TensorFlow's error messages. [`HostPort`] reads a server named as
//! `HOST[:PORT]` (a rendezvous, an etcd member) by the same address grammar.
//!
//! This is the layer every other crate of the workspace builds on. Depend on it alone when you
//! only need to describe, validate, read or write a cluster: it pulls `cluster-proto` (prost
//! messages), serde and serde_json, and no async runtime or gRPC.
//!
//! ## Features
//!
//! None. serde support (the TF_CONFIG `cluster` object) is always on.
//!
//! ## Example
//!
//! ```
//! use cluster_spec::ClusterSpec;
//!
//! let spec = ClusterSpec::from_json(r#"{
//!     "worker": ["w0.example.com:2222", "w1.example.com:2222"],
//!     "ps": {"1": "ps1.example.com:2222"}
//! }"#)?;
//!
//! assert_eq!(spec.jobs(), ["worker", "ps"]);                // definition order
//! assert_eq!(spec.num_tasks("worker")?, 2);
//! assert_eq!(spec.task_address("ps", 1)?, "ps1.example.com:2222");
//! assert_eq!(spec.job_tasks("ps")?, [None, Some("ps1.example.com:2222")]);
//! assert_eq!(
//!     spec.to_string(),
//!     "ClusterSpec({'ps': {1: 'ps1.example.com:2222'}, \
//!      'worker': ['w0.example.com:2222', 'w1.example.com:2222']})"
//! );
//! assert_eq!(
//!     spec.task_address("chief", 0).unwrap_err().to_string(),
//!     "No such job in cluster: 'chief'"
//! );
//!
//! // The ClusterDef TensorFlow puts in a ServerDef: jobs sorted by name.
//! let def = spec.as_cluster_def();
//! assert_eq!(def.job[0].name, "ps");
//! assert_eq!(ClusterSpec::try_from(def)?, spec);
//!
//! // Invalid input never becomes a spec.
//! let err = ClusterSpec::from_json(r#"{"worker": ["localhost"]}"#).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "invalid address \"localhost\" for task 0 of job 'worker': no port: an address must be host:port"
//! );
//! # Ok::<(), cluster_spec::Error>(())
//! ```
//!
//! ## Performance
//!
//! A spec keeps every job name and address in one string and each task in 12 bytes, and the
//! JSON reader validates each address in the pass that finds its end. For a 10,000-task
//! cluster (4 jobs × 2,500 addresses like `host1-42.example.com:2042`, 300 KB of JSON), parsing,
//! encoding the `ClusterDef` and one lookup per job take a small fraction of TensorFlow's
//! 9.4 ms (see `benches/cluster_spec.rs` and `docs/benchmarks.md` for measured figures).
//!
//! ## Differences from TensorFlow
//!
//! TensorFlow's Python `ClusterSpec` accepts nearly anything and its C++ runtime later aborts
//! or fails on it; this crate rejects it when the spec is built, with an error naming the job,
//! the task and the value:
//!
//! - **Job names** must follow the device-name grammar `[A-Za-z][A-Za-z0-9_]*` that TensorFlow's
//!   runtime enforces (an invalid local job name aborts a TF server). TF's Python accepts any
//!   string, including `''`.
//! - **Addresses** must be `host:port`: a host of `[A-Za-z0-9._-]` or a bracketed IPv6 address
//!   (optionally with `%zone`), and a decimal port from 0 to 65535. TF's Python accepts any
//!   string (`"localhost"` without a port fails only when a server starts); TF's C++ also
//!   accepts `/bns/…` names (Google-internal) and hosts of any character but `/`. Non-ASCII host
//!   names must be written in punycode.
//! - **Task indices** must be from 0 to 2^31−1 (the proto's `int32`); TF's Python accepts
//!   negative indices.
//! - **JSON keys** of a sparse job must be ASCII decimal digits (`"01"` means 1, as TF's
//!   `int()`); `" 1"`, `"1.0"` or `"-1"` are errors. Two keys naming one index (`"1"` and `"01"`)
//!   and a job name given twice are errors, where TF's Python silently keeps the last.
//! - [`ClusterSpec::job_tasks`] of an empty job is `[]`; TF raises
//!   `ValueError: max() arg is an empty sequence`.
//! - [`ClusterSpec::as_cluster_def`] returns a new message; TF returns its internal proto by
//!   reference, so mutating it changes the spec. A spec built from a `ClusterDef` keeps the
//!   proto's job order for [`ClusterSpec::jobs`], as TF does, but `as_cluster_def` always sorts
//!   jobs by name.
//! - proto3 lets an encoder omit a default field: prost (and [`ClusterSpec::encode_cluster_def`])
//!   omits a map entry's key `0`, which TF's encoder writes. Both decode to the same message.
//! - Equality compares two specs only (as TF's `ClusterSpec == ClusterSpec`); TF's comparison
//!   with a plain dict has no counterpart. Specs are not hashable in TF; here they are `Eq`.

mod builder;
mod cluster_def;
mod error;
mod grammar;
mod host_port;
pub mod job_counts;
pub mod job_name;
mod json;
mod private;
mod serde_support;
mod spec;
mod task_id;

pub use builder::{ClusterSpecBuilder, MAX_TASK_INDEX};

/// What the workspace's crates share but is not this crate's API: how every crate words an
/// error (see CONTRIBUTING.md, "API style"). Public only for those crates; may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::private::{error_chain, quote};
}

/// Most heap bytes [`ClusterSpec::decode_cluster_def`] holds per byte of its input, at any
/// moment, whatever the input (plus a few hundred bytes): the spec's text is reserved at the
/// input's size once, and a job's map entries take 12 bytes each while it is read (an entry is
/// at least 2 bytes of wire).
pub const DECODE_MEMORY_FACTOR: usize = 8;

/// Most heap bytes [`ClusterSpec::from_json`] holds per byte of its input, at any moment,
/// whatever the input (plus a few hundred bytes): the spec keeps a copy of the input, 32 bytes
/// per job (at least 9 bytes of JSON, `"j1":[],`) and 12 per task, in vectors that grow by
/// doubling. Many tiny jobs are the worst case, at about 7.6.
pub const JSON_MEMORY_FACTOR: usize = 8;
pub use error::Error;
pub use host_port::{HostPort, HostPortError};
pub use spec::ClusterSpec;
pub use task_id::TaskId;

impl ClusterSpec {
    /// Parses the TF_CONFIG `cluster` JSON shape: an object from job names to either an array
    /// of addresses (a dense job: task `i` is element `i`) or an object from decimal task
    /// indices to addresses (a sparse job).
    ///
    /// Errors name the job, task and value, and for malformed JSON the line and column.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        json::parse(json)
    }

    /// The spec as JSON in TensorFlow's `as_dict` shape: jobs in definition order, dense jobs
    /// as arrays, sparse jobs as objects keyed by decimal index, jobs with no tasks as `{}`.
    /// [`from_json`](Self::from_json) reads it back to an equal spec.
    pub fn to_json(&self) -> String {
        json::write(self)
    }
}

impl std::str::FromStr for ClusterSpec {
    type Err = Error;

    fn from_str(json: &str) -> Result<Self, Error> {
        Self::from_json(json)
    }
}
