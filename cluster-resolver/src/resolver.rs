//! The [`ClusterResolver`] trait: one source of cluster information, as TensorFlow's
//! `tf.distribute.cluster_resolver.ClusterResolver`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

use crate::Error;

/// Finds a cluster, and this process's place in it, from one source: an environment variable,
/// a scheduler, a cloud API.
///
/// As TensorFlow's contract says, [`cluster_spec`](Self::cluster_spec) reads its source again on
/// every call, so a resolver can follow a cluster that changes (pods restarting, a TF_CONFIG
/// rewritten by a launcher).
///
/// ```
/// use cluster_resolver::{ClusterResolver, SimpleClusterResolver};
/// use cluster_spec::ClusterSpec;
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let spec = ClusterSpec::builder().job("worker", ["w0:2222", "w1:2222"]).build()?;
/// let resolver = SimpleClusterResolver::new(spec.clone())
///     .with_task("worker", 1)
///     .with_rpc_layer("grpc");
/// assert_eq!(resolver.cluster_spec().await?, spec);
/// assert_eq!(resolver.master(Some("worker"), Some(0), None).await?, "grpc://w0:2222");
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
#[async_trait]
pub trait ClusterResolver: Send + Sync {
    /// The current cluster, read from the source again on every call.
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error>;

    /// The address a session should connect to: that of task `task_id` of job `task_type` when
    /// both are given, else the resolver's own notion of the master (which may be `""`). With
    /// an RPC layer (the argument, else the resolver's own) it is prefixed `"<layer>://"`.
    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, Error>;

    /// This process's job, if the source says.
    fn task_type(&self) -> Option<String>;

    /// This process's task index, if the source says.
    fn task_id(&self) -> Option<u32>;

    /// The RPC layer, e.g. `"grpc"`, if the source says.
    fn rpc_layer(&self) -> Option<String>;

    /// The environment the cluster runs in, e.g. `"google"` for TF_CONFIG's, or `""`.
    fn environment(&self) -> String {
        String::new()
    }

    /// Accelerators per device type (`{"GPU": 4}`) of a task, as far as the source knows them.
    ///
    /// TensorFlow's base class asks the running master for its devices; that needs a
    /// connection, which lives in the `remote-connect` crate above this one. Here a resolver
    /// answers from its source (Slurm's GPUs per task, a TPU's accelerator type, the count a
    /// [`SimpleClusterResolver`](crate::SimpleClusterResolver) was given) and the default
    /// knows of none.
    async fn num_accelerators(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, Error> {
        let _ = (task_type, task_id);
        Ok(BTreeMap::new())
    }
}

/// TensorFlow's `format_master_url`: `"<rpc_layer>://<master>"`, or `master` alone when there
/// is no (or an empty) RPC layer. Like TF, `("", Some("grpc"))` gives `"grpc://"`.
pub fn format_master_url(master: &str, rpc_layer: Option<&str>) -> String {
    match rpc_layer {
        Some(layer) if !layer.is_empty() => format!("{layer}://{master}"),
        _ => master.to_owned(),
    }
}

/// The master of a resolver whose spec is known: task `(task_type, task_id)`'s address when
/// both are given, else `fallback`; formatted with the RPC layer.
pub(crate) fn master_from_spec(
    spec: &ClusterSpec,
    task_type: Option<&str>,
    task_id: Option<u32>,
    rpc_layer: Option<&str>,
    fallback: &str,
) -> Result<String, Error> {
    let master = match (task_type, task_id) {
        (Some(job), Some(task)) => spec.task_address(job, task)?,
        _ => fallback,
    };
    Ok(format_master_url(master, rpc_layer))
}

/// `master` of a resolver that lists its cluster over the network (Kubernetes, GCE): task
/// `(task_type, task_id)`'s address, the id falling back to the override; `""` without both,
/// as TensorFlow (and then nothing is listed). Formatted with `rpc_layer`, else the override.
#[cfg(any(feature = "gce", feature = "kubernetes"))]
pub(crate) async fn listed_master<R: ClusterResolver + ?Sized>(
    resolver: &R,
    overrides: &crate::overrides::Overrides,
    task_type: Option<&str>,
    task_id: Option<u32>,
    rpc_layer: Option<&str>,
) -> Result<String, Error> {
    let (Some(task_type), Some(task_id)) = (task_type, task_id.or(overrides.task_id)) else {
        return Ok(String::new());
    };
    let spec = resolver.cluster_spec().await?;
    let layer = overrides.master_rpc_layer(rpc_layer);
    master_from_spec(&spec, Some(task_type), Some(task_id), layer, "")
}
