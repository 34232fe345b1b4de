//! [`RendezvousClusterResolver`]: a round's cluster, for anything that takes a
//! `ClusterResolver` (`remote-connect`'s `connect_to_cluster`).

use async_trait::async_trait;
use cluster_resolver::{ClusterResolver, format_master_url};
use cluster_spec::ClusterSpec;

/// The cluster of one round, seen from one of its tasks; from [`Round::resolver`].
///
/// It answers like TensorFlow's `TFConfigClusterResolver` given the round's `TF_CONFIG`: the
/// round's cluster, the task's job and index, RPC layer `grpc`, environment `""`, and as
/// master (with no task asked for) the task's own address.
///
/// [`Round::resolver`]: crate::Round::resolver
#[derive(Debug, Clone)]
pub struct RendezvousClusterResolver {
    spec: ClusterSpec,
    job: String,
    index: u32,
}

impl RendezvousClusterResolver {
    /// Task `index` of job `job` of the cluster `spec`.
    pub(crate) fn new(spec: ClusterSpec, job: String, index: u32) -> Self {
        Self { spec, job, index }
    }
}

#[async_trait]
impl ClusterResolver for RendezvousClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, cluster_resolver::Error> {
        Ok(self.spec.clone())
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, cluster_resolver::Error> {
        let job = task_type.unwrap_or(&self.job);
        let index = task_id.unwrap_or(self.index);
        let address = self.spec.task_address(job, index)?;
        Ok(format_master_url(address, rpc_layer.or(Some("grpc"))))
    }

    fn task_type(&self) -> Option<String> {
        Some(self.job.clone())
    }

    fn task_id(&self) -> Option<u32> {
        Some(self.index)
    }

    fn rpc_layer(&self) -> Option<String> {
        Some("grpc".to_owned())
    }
}
