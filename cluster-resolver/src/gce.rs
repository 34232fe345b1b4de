//! [`GceClusterResolver`]: the cluster is the running instances of a Compute Engine instance
//! group, as TensorFlow's `GCEClusterResolver` (feature `gce`).
//!
//! Every [`cluster_spec`](ClusterResolver::cluster_spec) call lists the group's RUNNING
//! instances with `instanceGroups.listInstances` (every page), reads each instance's first
//! network IP with `instances.get`, and returns one job (`worker` unless told otherwise) with a
//! task per instance at `<networkIP>:<port>`, ordered by instance name.
//!
//! Requests carry the VM service account's access token from the metadata server (which
//! `GCE_METADATA_HOST` may relocate), or a token given with
//! [`with_access_token`](GceClusterResolver::with_access_token); the account needs
//! `compute.instanceGroups.list` and `compute.instances.get`. Each request has a deadline
//! ([`with_request_timeout`](GceClusterResolver::with_request_timeout), 30 s by default).
//!
//! ```
//! use cluster_resolver::{ClusterResolver, GceClusterResolver};
//!
//! let resolver = GceClusterResolver::new("my-project", "us-central1-a", "tf-workers", 8470)
//!     .with_task_id(2)
//!     .with_access_token("ya29.token-from-gcloud");
//! assert_eq!(resolver.task_type().as_deref(), Some("worker"));
//! assert_eq!(resolver.task_id(), Some(2));
//! assert_eq!(resolver.rpc_layer().as_deref(), Some("grpc"));
//! ```
//!
//! The GCE and TPU resolvers share this module's HTTP client: hyper 1 with rustls (ring) and
//! the system's root certificates, the stack kube's client uses too.
//!
//! # Differences from TensorFlow
//!
//! - **Ordered by instance name.** TensorFlow sorts the `"ip:port"` strings, so `10.0.0.10`
//!   comes before `10.0.0.9`, and a VM's task index changes when its IP does. Here tasks
//!   follow the instance names (the API's own `orderBy=name`, which TensorFlow requests and
//!   then discards).
//! - **Credentials**: the metadata server's token or a given one. TensorFlow uses Google's
//!   application default credentials (also key files and `gcloud` user credentials); obtain a
//!   token from those yourself and pass it.
//! - **An empty group is an empty job**; TensorFlow fails with `KeyError: 'items'` when a page
//!   has no `items`.
//! - The `instances.get` calls run concurrently (8 at a time; TensorFlow: one by one), and when
//!   several fail, every failure is reported.
//! - Every request has a deadline; TensorFlow's have none.
//! - `num_accelerators` knows of none (`{}`): TensorFlow's base class connects to the master to
//!   count devices, which is the `remote-connect` crate's business.

pub(crate) mod api;
mod auth;
mod compute;
pub(crate) mod http;
mod metadata;
pub(crate) mod url;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;
use futures_util::{StreamExt, stream};

use crate::overrides::{Overrides, override_accessors, override_methods};
use crate::resolver::listed_master;
use crate::{ClusterResolver, Error};
use api::{GoogleApi, google_api_methods};
use compute::Group;

/// How many `instances.get` requests run at once.
const CONCURRENT_GETS: usize = 8;

/// Resolves a cluster from the running instances of a zonal Compute Engine instance group.
///
/// Built with [`new`](Self::new) and `with_*` methods; see the [module docs](self). The task
/// index (TensorFlow's `task_id`) is 0 and the RPC layer `grpc` unless set; the job
/// ([`with_task_type`](Self::with_task_type)) is fixed once built.
#[derive(Debug)]
pub struct GceClusterResolver {
    project: String,
    zone: String,
    instance_group: String,
    port: u16,
    /// Not an override: the job is fixed once built, as TensorFlow's setter refuses to change
    /// it, and there is always one.
    task_type: String,
    /// The task id and RPC layer; there is no source they override, so they start at
    /// TensorFlow's defaults.
    overrides: Overrides,
    compute_url: String,
    api: GoogleApi,
}

impl GceClusterResolver {
    /// The Compute Engine API v1 base URL.
    pub const COMPUTE_URL: &'static str = "https://compute.googleapis.com/compute/v1";

    /// A resolver for instance group `instance_group` in `project` and `zone` whose servers
    /// listen on `port`, with TensorFlow's defaults: job `worker`, task 0, RPC layer `grpc`,
    /// metadata-server credentials.
    pub fn new(
        project: impl Into<String>,
        zone: impl Into<String>,
        instance_group: impl Into<String>,
        port: u16,
    ) -> Self {
        Self {
            project: project.into(),
            zone: zone.into(),
            instance_group: instance_group.into(),
            port,
            task_type: "worker".to_owned(),
            overrides: Overrides {
                task_id: Some(0),
                rpc_layer: Some("grpc".to_owned()),
                ..Overrides::default()
            },
            compute_url: Self::COMPUTE_URL.to_owned(),
            api: GoogleApi::new(),
        }
    }

    /// Names the job (TensorFlow's `task_type`, fixed once built, as TensorFlow's setter
    /// refuses to change it).
    pub fn with_task_type(mut self, task_type: impl Into<String>) -> Self {
        self.task_type = task_type.into();
        self
    }

    override_methods!(task_id, rpc_layer);

    google_api_methods!(
        "Reads `GCE_METADATA_HOST` / `GCE_METADATA_IP` from `env` instead of the process \
         environment."
    );

    /// Reaches the Compute API at `base` instead of [`COMPUTE_URL`](Self::COMPUTE_URL)
    /// (a private endpoint, or a test server).
    pub fn with_compute_url(mut self, base: impl Into<String>) -> Self {
        self.compute_url = url::trim_base(&base.into());
        self
    }

    fn group(&self) -> Group<'_> {
        Group {
            compute_url: &self.compute_url,
            project: &self.project,
            zone: &self.zone,
            name: &self.instance_group,
        }
    }
}

#[async_trait]
impl ClusterResolver for GceClusterResolver {
    /// Lists the group again: `{task_type: ["<networkIP>:<port>", …]}`, one task per RUNNING
    /// instance, ordered by instance name.
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error> {
        let group = self.group();
        let mut names = compute::running_instances(&self.api, &group).await?;
        names.sort();
        let group = &group;
        // Owned names: a closure over `&String` would need a higher-ranked lifetime that the
        // `Send` future of `async_trait` cannot express.
        let results: Vec<Result<String, Error>> = stream::iter(names)
            .map(|name| async move { compute::network_ip(&self.api, group, &name).await })
            .buffered(CONCURRENT_GETS)
            .collect()
            .await;
        let mut addresses = Vec::with_capacity(results.len());
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(ip) => addresses.push(host_port(&ip, self.port)),
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Ok(ClusterSpec::builder()
                .job(&self.task_type, addresses)
                .build()?),
            1 => Err(errors.remove(0)),
            _ => Err(Error::Multiple { errors }),
        }
    }

    /// The address of task `task_id` of job `task_type` (each falling back to the resolver's
    /// own), with the RPC layer; `""` if no task index is known.
    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, Error> {
        let task_type = task_type.unwrap_or(&self.task_type);
        listed_master(self, &self.overrides, Some(task_type), task_id, rpc_layer).await
    }

    fn task_type(&self) -> Option<String> {
        Some(self.task_type.clone())
    }

    override_accessors!(task_id, rpc_layer);
}

/// `ip:port`, an IPv6 address in brackets (GCE's `networkIP` is IPv4 today; `ipv6Address` is a
/// separate field the resolver does not read).
fn host_port(ip: &str, port: u16) -> String {
    if ip.contains(':') && !ip.starts_with('[') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}
