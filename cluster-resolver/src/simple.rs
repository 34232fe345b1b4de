//! [`SimpleClusterResolver`]: a fixed spec, as TensorFlow's `SimpleClusterResolver`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

use crate::overrides::{Overrides, override_accessors, override_methods};
use crate::resolver::master_from_spec;
use crate::{ClusterResolver, Error};

/// Resolves to the spec it was given, with optional master, task, environment, accelerator
/// count and RPC layer.
///
/// There is no source behind it: the task and RPC layer are those set (none by default), the
/// environment the one set (`""` by default).
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
    num_accelerators: BTreeMap<String, u32>,
    overrides: Overrides,
}

impl SimpleClusterResolver {
    /// A resolver for `spec` with no master, task, environment, accelerators or RPC layer.
    pub fn new(spec: ClusterSpec) -> Self {
        Self {
            spec,
            master: String::new(),
            num_accelerators: BTreeMap::new(),
            overrides: Overrides::default(),
        }
    }

    /// Sets the master returned when no task is asked for.
    pub fn with_master(mut self, master: impl Into<String>) -> Self {
        self.master = master.into();
        self
    }

    override_methods!(task, rpc_layer, environment);

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
        let layer = rpc_layer.or(self.overrides.rpc_layer.as_deref());
        master_from_spec(&self.spec, task_type, task_id, layer, &self.master)
    }

    override_accessors!(task_type, task_id, rpc_layer, environment);

    async fn num_accelerators(
        &self,
        _task_type: Option<&str>,
        _task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, Error> {
        Ok(self.num_accelerators.clone())
    }
}
