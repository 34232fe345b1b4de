//! # tfcluster-python — the `tfcluster` Python package's native module
//!
//! The Python layer of the workspace: `pip install tfcluster` gives TensorFlow's Python users
//! the `tfcluster` command-line tool (the same native binary, in the wheel's scripts) and this
//! module, `tfcluster._native`, which exposes the Rust layers below to Python:
//!
//! - [`ClusterSpec`](spec::ClusterSpec): `cluster-spec`'s validation and conversions (a dict or
//!   TF_CONFIG-shaped JSON in, TensorFlow's `as_dict` and `ClusterDef` bytes out);
//! - `hostlist_expand` / `hostlist_compress`: `cluster-resolver`'s Slurm hostlist grammar;
//! - the resolvers of `cluster-resolver` ([`resolvers`]): Slurm, TF_CONFIG, SageMaker, a
//!   Kubernetes Indexed Job from its pod's environment, Kubernetes pods through the API
//!   (feature `kubernetes`) and `auto_detect()`.
//!
//! Nothing depends on this crate: it is a leaf, built by maturin into the wheel
//! (`python/pyproject.toml`), and holds no logic of its own beyond turning Python arguments into
//! the Rust builders' calls and Rust results into Python values. The Python package
//! (`python/tfcluster/`) re-exports it; `tfcluster.tf` wraps the resolvers as subclasses of
//! TensorFlow's `ClusterResolver` (TensorFlow is imported there only).
//!
//! ## Errors
//!
//! Rust errors become Python exceptions carrying the whole error chain
//! ([`Chain`](cluster_spec::__private::error_chain::Chain)): `ValueError` for invalid input (a spec, a
//! hostlist, a task that is not in the cluster), `RuntimeError` for an environment that does
//! not resolve (a Slurm step that cannot be a cluster, a missing or broken `TF_CONFIG`).
//!
//! ## Features
//!
//! - `kubernetes` (default): `KubernetesClusterResolver` (kube's client over rustls), so the
//!   wheel users get runs on Kubernetes as it is; `--no-default-features` leaves out kube and
//!   its HTTP and TLS stack. The Indexed Job resolver needs no feature.
//!
//! ## Differences from TensorFlow
//!
//! Those of `cluster-resolver` (Slurm ranks laid out as Slurm placed them, hostlists with zero
//! padding and every Slurm form, Kubernetes pod IPs, errors instead of wrong clusters), and:
//! resolvers take their options at construction (no `task_type`/`task_id` setters on the
//! Slurm, SageMaker and Kubernetes resolvers), and an environment that does not resolve is a
//! `RuntimeError` where TensorFlow sometimes raises `ValueError` (an invalid `TF_CONFIG`).

mod errors;
mod hostlist;
pub mod resolvers;
mod runtime;
pub mod spec;

use pyo3::prelude::*;

/// `tfcluster._native`: the classes and functions the `tfcluster` package re-exports.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<spec::ClusterSpec>()?;
    m.add_function(wrap_pyfunction!(hostlist::hostlist_expand, m)?)?;
    m.add_function(wrap_pyfunction!(hostlist::hostlist_compress, m)?)?;
    resolvers::register(m)
}
