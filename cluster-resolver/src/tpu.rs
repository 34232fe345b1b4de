//! [`TpuClusterResolver`]: the cluster is a Cloud TPU node's hosts, as TensorFlow's
//! `TPUClusterResolver` (feature `gce`).
//!
//! Every [`cluster_spec`](ClusterResolver::cluster_spec) call reads the node from the Cloud TPU
//! API (`GET https://tpu.googleapis.com/v1/projects/{project}/locations/{zone}/nodes/{tpu}`),
//! requires it to be `READY`, and returns job `worker` (or the `job_name` given) with one task
//! per network endpoint at `ipAddress:port`, plus a one-task coordinator job if one was given.
//! Project and zone default to this VM's, from the metadata server.
//!
//! The TPU is named as TensorFlow's `tpu` argument:
//! - a node name (`"my-tpu"`): looked up in the API;
//! - `"grpc://10.240.1.2:8470"` (comma-separated for several hosts): used as given, no API;
//! - `"local"`: a TPU attached to this VM, whose cluster is empty and master `""`;
//! - `""`: `KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS`, else `TPU_NAME`, read from the [`Env`](crate::Env) at each call.
//!
//! ```
//! use cluster_resolver::{ClusterResolver, TpuClusterResolver};
//!
//! # let run = async {
//! let local = TpuClusterResolver::local();
//! assert!(local.cluster_spec().await?.is_empty());
//! assert_eq!(local.master(None, None, None).await?, "");
//!
//! // Endpoints given directly need no API call.
//! let direct = TpuClusterResolver::new("grpc://10.240.1.2:8470,grpc://10.240.1.3:8470")
//!     .with_coordinator("coordinator", "10.128.0.5:8470");
//! assert_eq!(
//!     direct.cluster_spec().await?.to_json(),
//!     r#"{"worker":["10.240.1.2:8470","10.240.1.3:8470"],"coordinator":["10.128.0.5:8470"]}"#
//! );
//! assert_eq!(direct.master(None, None, None).await?, "grpc://10.240.1.2:8470");
//! assert_eq!(direct.coordination_service_leader(), "/job:worker/task:0");
//! # Ok::<(), cluster_resolver::Error>(())
//! # };
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run).unwrap();
//! ```
//!
//! # Differences from TensorFlow
//!
//! - **`num_accelerators` comes from the node's `acceleratorType`** and host count (`v3-8` →
//!   `{"TPU": 8}`, `v4-32` → `{"TPU": 4}`: the per-host count TensorFlow finds by connecting and
//!   listing devices, retrying up to 120 times). For `local` and `grpc://` TPUs, which have
//!   no API document, it knows of none (`{}`).
//! - **A coordinator needs its address**: TensorFlow starts a local TensorFlow server when only
//!   `coordinator_name` is given; servers live in the `remote-connect` crate.
//! - Credentials: the metadata server's token or a given one (TensorFlow: application default
//!   credentials). The API base URL is set with
//!   [`with_tpu_url`](TpuClusterResolver::with_tpu_url), not a discovery document
//!   (`TPU_API_DISCOVERY_URL`); `TPU_CONFIG` is not read.
//! - [`with_require_healthy`](TpuClusterResolver::with_require_healthy) optionally refuses a node whose
//!   `health` is not `HEALTHY` (TensorFlow checks only `state`).
//! - Every request has a deadline; IPv6 endpoints are bracketed.

mod accelerator;
mod node;

use std::collections::BTreeMap;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;
use hyper::Method;
use tokio::sync::OnceCell;

use crate::gce::api::{GoogleApi, google_api_methods};
use crate::gce::url::{escape, trim_base};
use crate::{ClusterResolver, format_master_url};
use node::Node;

pub use crate::error::tpu::Error;

/// The port TensorFlow assumes for a `grpc://` endpoint without one.
const DEFAULT_ENDPOINT_PORT: u16 = 8470;

/// Resolves a cluster from a Cloud TPU node; see the [module docs](self).
#[derive(Debug)]
pub struct TpuClusterResolver {
    tpu: String,
    project: Option<String>,
    zone: Option<String>,
    job_name: String,
    task_id: Option<u32>,
    coordinator: Option<(String, String)>,
    require_healthy: bool,
    tpu_url: String,
    api: GoogleApi,
    /// Project and zone once known (given, or asked of the metadata server once).
    location: OnceCell<(String, String)>,
}

/// Where a TPU's hosts come from.
enum Source {
    Local,
    Endpoints(Vec<String>),
    Node(String),
}

impl TpuClusterResolver {
    /// The Cloud TPU API v1 base URL.
    pub const TPU_URL: &'static str = "https://tpu.googleapis.com/v1";

    /// A resolver for the TPU named `tpu` (a node name, `grpc://` endpoints, `"local"`, or
    /// `""` for the environment's), with TensorFlow's defaults: job `worker`, task 0, no
    /// coordinator, this VM's project and zone.
    pub fn new(tpu: impl Into<String>) -> Self {
        Self {
            tpu: tpu.into(),
            project: None,
            zone: None,
            job_name: "worker".to_owned(),
            task_id: Some(0),
            coordinator: None,
            require_healthy: false,
            tpu_url: Self::TPU_URL.to_owned(),
            api: GoogleApi::new(),
            location: OnceCell::new(),
        }
    }

    /// A TPU attached to this VM: an empty cluster and master `""`.
    pub fn local() -> Self {
        Self::new("local")
    }

    /// Sets the GCP project (default: this VM's, from the metadata server).
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Sets the zone (default: this VM's, from the metadata server).
    pub fn with_zone(mut self, zone: impl Into<String>) -> Self {
        self.zone = Some(zone.into());
        self
    }

    /// Names the TPU hosts' job (TensorFlow's `job_name`, default `worker`).
    pub fn with_job_name(mut self, job_name: impl Into<String>) -> Self {
        self.job_name = job_name.into();
        self
    }

    /// Adds job `name` with the single task `address` (TensorFlow's `coordinator_name` and
    /// `coordinator_address`).
    pub fn with_coordinator(mut self, name: impl Into<String>, address: impl Into<String>) -> Self {
        self.coordinator = Some((name.into(), address.into()));
        self
    }

    /// Also refuses a node whose `health` is not `HEALTHY`.
    pub fn with_require_healthy(mut self, require: bool) -> Self {
        self.require_healthy = require;
        self
    }

    google_api_methods!(
        "Reads `KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS`, `TPU_NAME` and `GCE_METADATA_HOST` from `env` \
         instead of the process environment."
    );

    /// Reaches the Cloud TPU API at `base` instead of [`TPU_URL`](Self::TPU_URL).
    pub fn with_tpu_url(mut self, base: impl Into<String>) -> Self {
        self.tpu_url = trim_base(&base.into());
        self
    }

    /// Replaces the task index (default 0); without one, the master is the job's first task.
    pub fn set_task_id(&mut self, task_id: Option<u32>) {
        self.task_id = task_id;
    }

    /// Where the coordination service runs, TensorFlow's `get_coordination_service_leader()`:
    /// `/job:<job_name>/task:0`.
    pub fn coordination_service_leader(&self) -> String {
        format!("/job:{}/task:0", self.job_name)
    }

    fn source(&self) -> Result<Source, crate::Error> {
        if self.tpu == "local" {
            return Ok(Source::Local);
        }
        let name = if self.tpu.is_empty() {
            ["KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_NAME"]
                .iter()
                .find_map(|v| self.api.env.get(v).transpose())
                .ok_or(Error::NameMissing)??
        } else {
            self.tpu.clone()
        };
        Ok(if name.starts_with("grpc://") {
            Source::Endpoints(name.split(',').map(endpoint_address).collect())
        } else {
            Source::Node(name)
        })
    }

    async fn location(&self) -> Result<&(String, String), crate::Error> {
        self.location
            .get_or_try_init(|| async {
                // Empty counts as unset, as TensorFlow's `if project:`.
                let project = match self.project.as_ref().filter(|p| !p.is_empty()) {
                    Some(p) => p.clone(),
                    None => self.api.metadata_value("project/project-id").await?,
                };
                let zone = match self.zone.as_ref().filter(|z| !z.is_empty()) {
                    Some(z) => z.clone(),
                    // `projects/123456/zones/us-central1-b`
                    None => {
                        let path = self.api.metadata_value("instance/zone").await?;
                        path.rsplit('/').next().unwrap_or_default().to_owned()
                    }
                };
                Ok((project, zone))
            })
            .await
    }

    /// The node document, any failure wrapped in TensorFlow's lookup error.
    async fn node(&self, name: &str) -> Result<Node, crate::Error> {
        let (project, zone) = self.location().await?;
        let url = format!(
            "{}/projects/{}/locations/{}/nodes/{}",
            self.tpu_url,
            escape(project),
            escape(zone),
            escape(name)
        );
        self.api.call(Method::GET, &url, None).await.map_err(|e| {
            Error::Lookup {
                tpu: name.to_owned(),
                source: Box::new(e),
            }
            .into()
        })
    }
}

/// A `grpc://` endpoint as `host:port`: the prefix dropped and TensorFlow's port 8470 added
/// when none is given.
fn endpoint_address(endpoint: &str) -> String {
    let endpoint = endpoint.trim();
    let endpoint = endpoint.strip_prefix("grpc://").unwrap_or(endpoint);
    let has_port = match endpoint.rfind(']') {
        Some(close) => endpoint[close..].contains(':'),
        None => endpoint.contains(':'),
    };
    if has_port {
        endpoint.to_owned()
    } else {
        format!("{endpoint}:{DEFAULT_ENDPOINT_PORT}")
    }
}

#[async_trait]
impl ClusterResolver for TpuClusterResolver {
    /// `{job_name: [<ipAddress>:<port> per host]}` (plus the coordinator job); empty for
    /// `local`.
    async fn cluster_spec(&self) -> Result<ClusterSpec, crate::Error> {
        let workers = match self.source()? {
            Source::Local => return Ok(ClusterSpec::empty()),
            Source::Endpoints(endpoints) => endpoints,
            Source::Node(name) => self
                .node(&name)
                .await?
                .endpoints(&name, self.require_healthy)?,
        };
        let mut builder = ClusterSpec::builder().job(&self.job_name, workers);
        if let Some((name, address)) = &self.coordinator {
            builder = builder.job(name, [address]);
        }
        Ok(builder.build()?)
    }

    /// `grpc://` + the address of task (`task_type`, `task_id`) when both are given, else of
    /// the resolver's task, else of the job's first task; always the `grpc` layer, as
    /// TensorFlow. `""` for `local`.
    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        _rpc_layer: Option<&str>,
    ) -> Result<String, crate::Error> {
        if matches!(self.source()?, Source::Local) {
            return Ok(String::new());
        }
        let spec = self.cluster_spec().await?;
        let address = match (task_type, task_id, self.task_id) {
            (Some(job), Some(task), _) => spec.task_address(job, task)?,
            (_, _, Some(task)) => spec.task_address(&self.job_name, task)?,
            _ => spec
                .job_tasks(&self.job_name)?
                .first()
                .copied()
                .flatten()
                .ok_or_else(|| Error::NoTpus {
                    job: self.job_name.clone(),
                })?,
        };
        Ok(format_master_url(address, Some("grpc")))
    }

    fn task_type(&self) -> Option<String> {
        Some(self.job_name.clone())
    }

    fn task_id(&self) -> Option<u32> {
        self.task_id
    }

    fn rpc_layer(&self) -> Option<String> {
        Some("grpc".to_owned())
    }

    /// `{"TPU": <devices per host>}` from the node's accelerator type; `{}` for `local` and
    /// `grpc://` TPUs.
    async fn num_accelerators(
        &self,
        _task_type: Option<&str>,
        _task_id: Option<u32>,
    ) -> Result<BTreeMap<String, u32>, crate::Error> {
        let Source::Node(name) = self.source()? else {
            return Ok(BTreeMap::new());
        };
        let node = self.node(&name).await?;
        let hosts = node.endpoints(&name, self.require_healthy)?.len();
        let accelerator_type = node.accelerator_type.clone().unwrap_or_default();
        let per_host =
            accelerator::devices_per_host(&accelerator_type, hosts).map_err(|reason| {
                Error::AcceleratorType {
                    tpu: name.clone(),
                    accelerator_type,
                    reason,
                }
            })?;
        Ok(BTreeMap::from([("TPU".to_owned(), per_host)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    #[test]
    fn grpc_endpoints_get_tensorflows_default_port() {
        assert_eq!(endpoint_address("grpc://10.0.0.1"), "10.0.0.1:8470");
        assert_eq!(endpoint_address("grpc://10.0.0.1:1234"), "10.0.0.1:1234");
        assert_eq!(endpoint_address(" 10.0.0.2"), "10.0.0.2:8470");
        assert_eq!(endpoint_address("grpc://[fd00::1]"), "[fd00::1]:8470");
        assert_eq!(endpoint_address("grpc://[fd00::1]:9"), "[fd00::1]:9");
    }

    #[test]
    fn names_come_from_the_environment_when_empty() {
        let r = TpuClusterResolver::new("").with_env(Env::from_iter([("TPU_NAME", "my-tpu")]));
        assert!(matches!(r.source(), Ok(Source::Node(n)) if n == "my-tpu"));
        let r = TpuClusterResolver::new("").with_env(Env::from_iter([
            ("TPU_NAME", "my-tpu"),
            (
                "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS",
                "grpc://10.0.0.1:8470,grpc://10.0.0.2:8470",
            ),
        ]));
        assert!(matches!(r.source(), Ok(Source::Endpoints(e)) if e.len() == 2));
        let r = TpuClusterResolver::new("").with_env(Env::from_iter([("X", "y")]));
        assert_eq!(
            r.source().err().map(|e| e.to_string()).as_deref(),
            Some("Please provide a TPU Name to connect to.")
        );
    }
}
