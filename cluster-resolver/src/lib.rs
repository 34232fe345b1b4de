//! # cluster-resolver — find the cluster from the environment
//!
//! A TensorFlow job learns its cluster, and its own place in it, from whatever launched it:
//! a `TF_CONFIG` variable, a Slurm step, a SageMaker training job, Kubernetes pods, a GCE
//! instance group or a Cloud TPU. This crate is TensorFlow's `ClusterResolver` family for
//! Rust: one [`ClusterResolver`] trait, one resolver per source, [`auto_detect`](auto_detect()) to pick the
//! source a process was started by, and Slurm's [`hostlist`] grammar exactly as Slurm expands
//! it.
//!
//! Depend on it to launch or join a cluster from Rust; it builds on `cluster-spec` (every
//! resolver returns a validated [`ClusterSpec`](cluster_spec::ClusterSpec)), and
//! `remote-connect` takes any resolver to connect to the cluster it finds. Resolvers that read
//! environment variables take an [`Env`]: the process environment, read at each call, or a
//! fixed map, so tests never touch the process environment.
//!
//! | source | resolver | module docs (behaviour, differences from TensorFlow) |
//! |---|---|---|
//! | a fixed spec | [`SimpleClusterResolver`] | |
//! | several resolvers merged | [`UnionClusterResolver`] | [`union`] |
//! | `TF_CONFIG` | [`TfConfigClusterResolver`], [`tf_config_for`] | [`tf_config`], [`multi_worker`] |
//! | a Slurm step | [`SlurmClusterResolver`] | [`slurm`], [`hostlist`] |
//! | Amazon SageMaker | [`SageMakerClusterResolver`] | [`sagemaker`] |
//! | a Kubernetes Indexed Job or JobSet, from its pods' environment (no API access) | [`KubernetesIndexedJobClusterResolver`] | [`k8s_indexed`] |
//! | Kubernetes pods (feature `kubernetes`) | [`KubernetesClusterResolver`] | [`kubernetes`] |
//! | a GCE instance group (feature `gce`) | [`GceClusterResolver`] | [`gce`] |
//! | a Cloud TPU node (feature `gce`) | [`TpuClusterResolver`] | [`tpu`] |
//! | whichever launched this process | [`auto_detect`](auto_detect()) | [`auto_detect`](mod@auto_detect) |
//! | a cluster file (`--from file`) | [`cluster_file::parse`] | [`cluster_file`] |
//!
//! With feature `watch`, [`watch`] follows a cluster as it changes: a stream of specs, the
//! current one first, then one per change ([`WatchClusterResolver`]; a cluster file through
//! file events; any resolver by polling).
//!
//! [`gpus`] decides which GPUs each task of a host gets, as its `CUDA_VISIBLE_DEVICES`: the
//! host's GPUs (`CUDA_VISIBLE_DEVICES` as named, else NVML's count, loaded at run time, else
//! `nvidia-smi`; under a deadline, off the async threads) split evenly or as many per task as
//! asked. The Slurm resolver uses it for its task, `elastic`'s agent (`tfcluster run --rdzv
//! --tasks-per-node N`) for each task it starts, and `remote-connect`'s task server lists the
//! same GPUs (as TensorFlow shows them: [`gpus::visible`]) as its devices.
//!
//! ## Features
//!
//! - `kubernetes`: [`KubernetesClusterResolver`], with the kube client (rustls, ring). Like kube,
//!   it leaves the Kubernetes API version to the final binary, which enables one
//!   `k8s-openapi` version feature — or enables `k8s-openapi-earliest` here instead.
//! - `k8s-openapi-earliest`: `kubernetes` with k8s-openapi's oldest supported API version
//!   (only core/v1 pods are listed, which every version serves alike).
//! - `gce`: [`GceClusterResolver`] and [`TpuClusterResolver`], over the same hyper + rustls stack
//!   kube uses.
//! - `watch`: [`watch`], resolvers that report each change of their cluster (tokio timers,
//!   `notify` for file events; with `kubernetes`, kube-runtime's watcher).
//!
//! Without features the crate pulls no HTTP client, TLS or async runtime.
//!
//! ## Example
//!
//! ```
//! use cluster_resolver::{ClusterResolver, Env, TfConfigClusterResolver, multi_worker};
//!
//! # async fn run() -> Result<(), cluster_resolver::Error> {
//! let env = Env::from_iter([(
//!     "TF_CONFIG",
//!     r#"{"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]},
//!         "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}"#,
//! )]);
//! let resolver = TfConfigClusterResolver::new(env);
//! let spec = resolver.cluster_spec().await?;
//! assert_eq!(spec.jobs(), ["chief", "worker"]);
//! assert_eq!(resolver.task_type().as_deref(), Some("worker"));
//! assert_eq!(resolver.task_id(), Some(1));
//! assert_eq!(resolver.master(None, None, None).await?, "grpc://w1:2222");
//! assert!(!multi_worker::is_chief(&spec, "worker", 1)?);
//!
//! // Slurm's hostlists, zero padding kept per range endpoint.
//! let hosts = cluster_resolver::hostlist::expand("n[009-011],gpu1")?;
//! assert_eq!(hosts, ["n009", "n010", "n011", "gpu1"]);
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
//! ```
//!
//! ## Errors
//!
//! A function of one area fails with that area's error: [`hostlist::ParseError`] and
//! [`hostlist::TasksPerNodeError`] (the byte where a list breaks), [`multi_worker::Error`],
//! [`union::Error`], [`slurm::Error`], [`k8s_indexed::Error`], [`gpus::Error`], [`cluster_file::Error`], and with their features
//! `kubernetes::Error` and `tpu::Error`. Resolvers return the crate's [`Error`], which wraps each area's error whole
//! (`Error::Hostlist`, `Error::Slurm`, …) beside the failures every source shares (a missing
//! or invalid variable, a failed network call), and prints it unchanged.
//!
//! An error that wraps a cause (a failed request's transport error, NVML's error) says only
//! its own layer, `GET https://… failed`, and reaches the cause through
//! [`source`](std::error::Error::source), so an `anyhow` or `eyre` report shows each cause once;
//! [`Chain`](cluster_spec::__private::error_chain::Chain) shows the whole chain on one line
//! (`GET https://… failed: client error (Connect): tcp connect error: Connection refused`). An
//! error listing several failures ([`Error::Multiple`]) shows each with its whole chain.
//!
//! ## Differences from TensorFlow
//!
//! Each module lists its own; the ones that matter most:
//!
//! - **Slurm ranks are laid out as Slurm placed them** (the step's node order and
//!   `SLURM_DISTRIBUTION`, checked against `SLURMD_NODENAME`); TensorFlow sorts host names as
//!   strings (`n10` before `n9`) and assumes block distribution. Zero GPUs is a valid CPU-only
//!   cluster, and `CUDA_VISIBLE_DEVICES` is returned for the caller to set in a child's
//!   environment rather than written into this process's (which Rust 2024 makes `unsafe`).
//! - **Hostlists keep zero padding** per range endpoint, accept every form Slurm does, and
//!   reject what Slurm silently mangles ([`hostlist`]).
//! - **Kubernetes** uses the pod IP, lists one namespace, and loads in-cluster config before
//!   the kubeconfig; TensorFlow uses the host IP, lists all namespaces and only loads the
//!   kubeconfig.
//! - **Kubernetes Indexed Jobs and JobSets** resolve from the pod's environment alone
//!   ([`k8s_indexed`]); TensorFlow has no such resolver (it lists pods through the API, or
//!   reads a `TF_CONFIG` an operator wrote).
//! - **Overrides are `Option`s**, so a task id of 0 overrides (TensorFlow's `or` drops it).
//! - **Invalid input is an error** naming the variable, value and position, where TensorFlow
//!   often builds a wrong cluster (a current SageMaker host missing from `SM_HOSTS`, a
//!   `TF_CONFIG` index of `1.9`, duplicate hosts).
//! - **Every network call has a deadline** and a partial failure names every failed pod or
//!   instance.
//! - **Watching**: TensorFlow's resolvers are only asked again; [`watch`] reports each change.
//! - `num_accelerators` answers from the source (Slurm, TPU accelerator type, a given count)
//!   rather than by connecting to the master, which is `remote-connect`'s layer.
//!
// The feature-gated names above link to their items when the feature is on (as on docs.rs),
// else to the list of features that enable them.
#![cfg_attr(
    feature = "kubernetes",
    doc = "[`KubernetesClusterResolver`]: KubernetesClusterResolver\n[`kubernetes`]: mod@kubernetes"
)]
#![cfg_attr(
    not(feature = "kubernetes"),
    doc = "[`KubernetesClusterResolver`]: #features\n[`kubernetes`]: #features"
)]
#![cfg_attr(
    feature = "gce",
    doc = "[`GceClusterResolver`]: GceClusterResolver\n[`TpuClusterResolver`]: TpuClusterResolver",
    doc = "[`gce`]: mod@gce\n[`tpu`]: mod@tpu"
)]
#![cfg_attr(
    not(feature = "gce"),
    doc = "[`GceClusterResolver`]: #features\n[`TpuClusterResolver`]: #features",
    doc = "[`gce`]: #features\n[`tpu`]: #features"
)]
#![cfg_attr(
    feature = "watch",
    doc = "[`watch`]: mod@watch\n[`WatchClusterResolver`]: WatchClusterResolver"
)]
#![cfg_attr(
    not(feature = "watch"),
    doc = "[`watch`]: #features\n[`WatchClusterResolver`]: #features"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auto_detect;
mod backoff;
pub mod cluster_file;
mod cluster_source;
mod env;
mod error;
#[cfg(feature = "gce")]
#[cfg_attr(docsrs, doc(cfg(feature = "gce")))]
pub mod gce;
pub mod gpus;
pub mod hostlist;
pub mod k8s_indexed;
#[cfg(feature = "kubernetes")]
#[cfg_attr(docsrs, doc(cfg(feature = "kubernetes")))]
pub mod kubernetes;
pub mod multi_worker;
mod overrides;
mod resolver;
pub mod sagemaker;
mod simple;
pub mod slurm;
pub mod tf_config;
#[cfg(feature = "gce")]
#[cfg_attr(docsrs, doc(cfg(feature = "gce")))]
pub mod tpu;
pub mod union;
#[cfg(feature = "watch")]
#[cfg_attr(docsrs, doc(cfg(feature = "watch")))]
pub mod watch;

pub use auto_detect::{ClusterSource, OMPI_PORT_BASE, auto_detect, detect};
pub use backoff::Backoff;
pub use env::Env;
pub use error::Error;
#[cfg(feature = "gce")]
#[cfg_attr(docsrs, doc(cfg(feature = "gce")))]
pub use gce::GceClusterResolver;
pub use k8s_indexed::KubernetesIndexedJobClusterResolver;
#[cfg(feature = "kubernetes")]
#[cfg_attr(docsrs, doc(cfg(feature = "kubernetes")))]
pub use kubernetes::KubernetesClusterResolver;
pub use resolver::{ClusterResolver, format_master_url};
pub use sagemaker::SageMakerClusterResolver;
pub use simple::SimpleClusterResolver;
pub use slurm::{SlurmClusterResolver, SlurmStep, TasksPerNode};
pub use tf_config::{TfConfig, TfConfigClusterResolver, tf_config_for};
#[cfg(feature = "gce")]
#[cfg_attr(docsrs, doc(cfg(feature = "gce")))]
pub use tpu::TpuClusterResolver;
pub use union::UnionClusterResolver;
#[cfg(feature = "watch")]
#[cfg_attr(docsrs, doc(cfg(feature = "watch")))]
pub use watch::WatchClusterResolver;
