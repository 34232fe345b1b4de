//! [`SimpleClusterResolver`]: a fixed spec, as TensorFlow's `SimpleClusterResolver`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

use crate::resolver::master_from_spec;
use crate::{ClusterResolver, Error};

/// Resolves to the spec it was given, with optional master, task, environment, accelerator
/// count and RPC layer.
///
/// ```
/// use cluster_resolver::{ClusterResolver, SimpleClusterResolver};
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder().job("worker", ["w0:2222"]).build()?;
/// let resolver = SimpleClusterResolver::new(spec).with_task("worker", 0);
/// assert_eq!(resolver.task_id(), Some(0)); // an id of 0 is kept (TF's `or` would drop it)
/// # Ok::<(), cluster_spec::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimpleClusterResolver {
    spec: ClusterSpec,
    master: String,
    task_type: Option<String>,
    task_id: Option<u32>,
    environment: String,
    num_accelerators: BTreeMap<String, u32>,
    rpc_layer: Option<String>,
}

impl SimpleClusterResolver {
    /// A resolver for `spec` with no master, task, environment, accelerators or RPC layer.
    pub fn new(spec: ClusterSpec) -> Self {
        Self {
            spec,
            master: String::new(),
            task_type: None,
            task_id: None,
            environment: String::new(),
            num_accelerators: BTreeMap::new(),
            rpc_layer: None,
        }
    }

    /// Sets the master returned when no task is asked for.
    pub fn with_master(mut self, master: impl Into<String>) -> Self {
        self.master = master.into();
        self
    }

    /// Sets this process's job and task index.
    pub fn with_task(mut self, task_type: impl Into<String>, task_id: u32) -> Self {
        self.task_type = Some(task_type.into());
        self.task_id = Some(task_id);
        self
    }

    /// Sets the environment string.
    pub fn with_environment(mut self, environment: impl Into<String>) -> Self {
        self.environment = environment.into();
        self
    }

    /// Sets the accelerator counts [`num_accelerators`](ClusterResolver::num_accelerators)
    /// returns (for any task, as TF's).
    pub fn with_num_accelerators<I, K>(mut self, counts: I) -> Self
    where
        I: IntoIterator<Item = (K, u32)>,
        K: Into<String>,
    {
        self.num_accelerators = counts.into_iter().map(|(k, v)| (k.into(), v)).collect();
        self
    }

    /// Sets the RPC layer, e.g. `"grpc"`.
    pub fn with_rpc_layer(mut self, rpc_layer: impl Into<String>) -> Self {
        self.rpc_layer = Some(rpc_layer.into());
        self
    }

    /// Replaces the job and task index (either may be cleared).
    pub fn set_task(&mut self, task_type: Option<String>, task_id: Option<u32>) {
        self.task_type = task_type;
        self.task_id = task_id;
    }

    /// Replaces the RPC layer.
    pub fn set_rpc_layer(&mut self, rpc_layer: Option<String>) {
        self.rpc_layer = rpc_layer;
    }
}

#[async_trait]
impl ClusterResolver for SimpleClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error> {
        Ok(self.spec.clone())
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, Error> {
        let layer = rpc_layer.or(self.rpc_layer.as_deref());
        master_from_spec(&self.spec, task_type, task_id, layer, &self.master)
    }

    fn task_type(&self) -> Option<String> {
        self.task_type.clone()
    }

    fn task_id(&self) -> Option<u32> {
        self.task_id
    }

    fn rpc_layer(&self) -> Option<String> {
        self.rpc_layer.clone()
    }

    fn environment(&self) -> String {
        self.environment.clone()
    }

    async fn num_accelerators(
        &self,
        _task_type: Option<&str>,
        _task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, Error> {
        Ok(self.num_accelerators.clone())
    }
}
