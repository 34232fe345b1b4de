//! [`KubernetesClusterResolver`]: the cluster is the pods that label selectors match, as
//! TensorFlow's `KubernetesClusterResolver` (feature `kubernetes`).
//!
//! Each job is a list of label selectors (`{"worker": ["job-name=worker-pod"]}`); every
//! [`cluster_spec`](ClusterResolver::cluster_spec) call lists the pods of each selector in one
//! namespace, sorts them by name, and makes each a task at `<pod IP>:<port>`. Like TensorFlow's,
//! the resolver cannot tell which task this process is: set it with
//! [`with_task`](KubernetesClusterResolver::with_task) (e.g. from a StatefulSet ordinal).
//!
//! The client is configured on first use: the pod's service account when running in a pod
//! (`KUBERNETES_SERVICE_HOST`/`_PORT` and `/var/run/secrets/kubernetes.io/serviceaccount/`),
//! else the kubeconfig (`$KUBECONFIG` or `~/.kube/config`); or inject one with
//! [`with_client`](KubernetesClusterResolver::with_client). kube reads those variables from the
//! process environment, so this resolver takes no [`Env`](crate::Env). The service account
//! needs RBAC permission to `list` `pods` in the namespace.
//!
//! ```
//! use cluster_resolver::ClusterResolver;
//! use cluster_resolver::kubernetes::{KubernetesClusterResolver, PodAddress};
//!
//! let resolver = KubernetesClusterResolver::new()
//!     .with_job("worker", ["job-name=worker-pod"])
//!     .with_job("ps", ["job-name=ps-pod"])
//!     .with_port(2222)
//!     .with_namespace("training")
//!     .with_address(PodAddress::PodIp);
//! assert_eq!(resolver.rpc_layer().as_deref(), Some("grpc"));
//! assert_eq!(resolver.task_type(), None); // the pod's own task is not discoverable
//! # let run = async {
//! // Without a task there is no master, and nothing is listed (as TensorFlow).
//! assert_eq!(resolver.master(None, None, None).await?, "");
//! # Ok::<(), cluster_resolver::Error>(())
//! # };
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run).unwrap();
//! ```
//!
//! Against a real cluster, e.g. through `kubectl proxy` (the kube crate is re-exported as
//! [`kubernetes::kube`](kube) so the client's version always matches):
//!
//! ```no_run
//! use cluster_resolver::ClusterResolver;
//! use cluster_resolver::kubernetes::{KubernetesClusterResolver, kube};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kube::Config::new("http://127.0.0.1:8001".parse()?);
//! let resolver = KubernetesClusterResolver::new()
//!     .with_job("worker", ["app=trainer"])
//!     .with_client(kube::Client::try_from(config)?)
//!     .with_task("worker", 0);
//! println!("{}", resolver.cluster_spec().await?);
//! println!("{}", resolver.master(None, None, None).await?); // grpc://10.4.0.12:8470
//! # Ok(())
//! # }
//! ```
//!
//! With feature `watch` the resolver is also a `WatchClusterResolver` (see the `watch` module):
//! kube-runtime's watcher on each selector's pods reports the cluster at each change, a pod
//! being a member while it runs with its IP (the `watch` verb on `pods` is needed too).
//!
//! # Differences from TensorFlow
//!
//! - **Pod IP, not node IP.** TensorFlow uses `status.hostIP`, the node's address: wrong for any
//!   pod without `hostNetwork`, and two pods on one node collide. The default here is
//!   `status.podIP`; [`PodAddress::HostIp`] gives TensorFlow's choice.
//! - **One namespace.** TensorFlow calls `list_pod_for_all_namespaces`, so pods with the same
//!   labels in other namespaces (another team's `job-name=tensorflow`) join the cluster, and it
//!   needs cluster-wide RBAC. Here only the namespace given, else the client's (in a pod: the
//!   service account's namespace file; from a kubeconfig: the context's, else `default`).
//! - **In-cluster config first.** TensorFlow's `cluster_spec()` calls `load_kube_config()` on
//!   every call whatever `executable_location` says, so it fails inside pods
//!   (tensorflow/tensorflow#50449, #70581). Here the service account is used when present,
//!   the kubeconfig otherwise, loaded once; there is no `executable_location`.
//! - **Every pod that is not running is named**, with its phase (TensorFlow stops at the
//!   first, same sentence); [`with_wait_for_running`](KubernetesClusterResolver::with_wait_for_running)
//!   optionally polls (with backoff, up to a deadline) instead of failing at once. A running
//!   pod without the IP is an error (TensorFlow would write `None:8470`).
//! - **A pod matched by two selectors is an error**; TensorFlow lists it twice, as two tasks on
//!   one address.
//! - **IPv6 addresses are bracketed** (`[fd00::1]:8470`; TensorFlow writes `fd00::1:8470`).
//! - **Every API call has a deadline** ([`with_request_timeout`](KubernetesClusterResolver::with_request_timeout),
//!   30 s by default); TensorFlow's calls have none.
//! - `num_accelerators` knows of none (`{}`): TensorFlow's base class connects to the master
//!   to count devices, which is the `remote-connect` crate's business.
//! - The feature needs Rust 1.89 (kube's minimum), and, as kube itself, a Kubernetes API version
//!   chosen with a `k8s-openapi` feature by the final binary (or this crate's
//!   `k8s-openapi-earliest`).

mod client;
mod pods;
#[cfg(feature = "watch")]
mod watch;

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cluster_spec::ClusterSpec;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tokio::sync::OnceCell;

use crate::ClusterResolver;
use crate::backoff::Backoff;
use crate::overrides::{Overrides, override_accessors, override_methods};
use crate::resolver::listed_master;
use client::ClientSource;
pub use kube;

pub use crate::error::kubernetes::Error;
pub use pods::PodAddress;
use pods::{PodTask, check_running, pod_tasks};

/// Resolves a cluster from the pods that label selectors match in one Kubernetes namespace.
///
/// Built with [`new`](Self::new) and `with_*` methods; see the [module docs](self). The task
/// is only what [`with_task`](Self::with_task) or `set_task` (TensorFlow's setters) say, as
/// Kubernetes cannot tell; the RPC layer is `grpc` unless set.
pub struct KubernetesClusterResolver {
    /// Job name → label selectors, in the order given (TensorFlow's dict order).
    jobs: Vec<(String, Vec<String>)>,
    /// Whether `jobs` is still TensorFlow's default mapping, replaced by the first `with_job`.
    default_jobs: bool,
    port: u16,
    /// The task (which Kubernetes cannot tell) and the RPC layer (`grpc` unless set).
    overrides: Overrides,
    namespace: Option<String>,
    address: PodAddress,
    wait_for_running: Option<Duration>,
    request_timeout: Duration,
    client: ClientSource,
}

impl KubernetesClusterResolver {
    /// TensorFlow's default port, `tf_server_port=8470`.
    pub const DEFAULT_PORT: u16 = 8470;
    /// TensorFlow's default mapping: job `worker` is the pods labelled `job-name=tensorflow`.
    pub const DEFAULT_JOB: (&'static str, &'static str) = ("worker", "job-name=tensorflow");
    /// The default deadline of each API call.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

    /// A resolver with TensorFlow's defaults: job `worker` = pods labelled
    /// `job-name=tensorflow`, port 8470, RPC layer `grpc`, no task, the client's namespace, the
    /// pod IP, failing on pods that are not running.
    pub fn new() -> Self {
        Self {
            jobs: vec![(
                Self::DEFAULT_JOB.0.to_owned(),
                vec![Self::DEFAULT_JOB.1.to_owned()],
            )],
            default_jobs: true,
            port: Self::DEFAULT_PORT,
            overrides: Overrides {
                rpc_layer: Some("grpc".to_owned()),
                ..Overrides::default()
            },
            namespace: None,
            address: PodAddress::default(),
            wait_for_running: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            client: ClientSource::Inferred(OnceCell::new()),
        }
    }

    /// Maps job `job` to the pods matching any of `selectors` (Kubernetes label selector
    /// syntax, e.g. `job-name=worker-pod` or `app=tf,role in (worker)`), listed selector by
    /// selector and concatenated, as TensorFlow's `job_to_label_mapping`.
    ///
    /// The first call replaces the default mapping; jobs keep the order of the calls, and a job
    /// given again has its selectors replaced.
    pub fn with_job<I, S>(mut self, job: impl Into<String>, selectors: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if self.default_jobs {
            self.jobs.clear();
            self.default_jobs = false;
        }
        let job = job.into();
        let selectors = selectors.into_iter().map(Into::into).collect();
        match self.jobs.iter_mut().find(|(name, _)| *name == job) {
            Some((_, existing)) => *existing = selectors,
            None => self.jobs.push((job, selectors)),
        }
        self
    }

    /// Sets the port every task listens on (TensorFlow's `tf_server_port`).
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    override_methods!(rpc_layer, task);

    /// Lists pods in `namespace` instead of the client's default namespace.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Chooses the pod IP (default) or, as TensorFlow, the node IP.
    pub fn with_address(mut self, address: PodAddress) -> Self {
        self.address = address;
        self
    }

    /// Uses `client` instead of configuring one from the environment (its default namespace
    /// is the one listed unless [`with_namespace`](Self::with_namespace) says otherwise).
    pub fn with_client(mut self, client: kube::Client) -> Self {
        self.client = ClientSource::Injected(client);
        self
    }

    /// Waits up to `timeout` for selected pods that are not running yet (polling with backoff
    /// from 250 ms to 5 s), instead of failing at once; after it the error names every pod
    /// still not running.
    pub fn with_wait_for_running(mut self, timeout: Duration) -> Self {
        self.wait_for_running = Some(timeout);
        self
    }

    /// Sets the deadline of each API call (and of configuring the client), 30 s by default.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The jobs and their label selectors, in order.
    pub fn jobs(&self) -> &[(String, Vec<String>)] {
        &self.jobs
    }

    /// The namespace [`cluster_spec`](ClusterResolver::cluster_spec) lists (configuring the
    /// client if needed).
    pub async fn namespace(&self) -> Result<String, crate::Error> {
        let client = self.client.client(self.request_timeout).await?;
        Ok(self.namespace_of(&client))
    }

    fn namespace_of(&self, client: &kube::Client) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned())
    }

    /// One listing of every selector: each job with its pods, selector by selector.
    async fn list_jobs(
        &self,
        client: &kube::Client,
        namespace: &str,
        timeout: Duration,
    ) -> Result<Vec<Listing<'_>>, crate::Error> {
        let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let mut listings = Vec::with_capacity(self.jobs.len());
        for (job, selectors) in &self.jobs {
            for selector in selectors {
                let pods = list_pods(&api, namespace, selector, timeout).await?;
                listings.push(Listing {
                    job,
                    selector,
                    tasks: pod_tasks(pods, self.address, self.port),
                });
            }
        }
        Ok(listings)
    }

    /// The spec of one listing, or why it cannot be one (yet). With [`Members::AllRunning`]
    /// a selected pod not running with its IP is an error (`cluster_spec`); with
    /// [`Members::RunningOnly`] it is simply not a member (a watch, where pods come and go).
    fn spec_of(
        &self,
        namespace: &str,
        listings: &[Listing<'_>],
        members: Members,
    ) -> Result<ClusterSpec, crate::Error> {
        if members == Members::AllRunning {
            check_running(
                namespace,
                self.address,
                listings.iter().flat_map(|l| &l.tasks),
            )?;
        }
        let mut seen: HashMap<&str, String> = HashMap::new();
        let mut builder = ClusterSpec::builder();
        for (job, _) in &self.jobs {
            let mut addresses = Vec::new();
            for listing in listings.iter().filter(|l| l.job == job) {
                for task in &listing.tasks {
                    if let PodTask::Running { name, address } = task {
                        let by = format!("job '{job}': {}", listing.selector);
                        if let Some(first) = seen.insert(name, by.clone()) {
                            return Err(Error::PodSelectedTwice {
                                namespace: namespace.to_owned(),
                                pod: name.clone(),
                                first,
                                second: by,
                            }
                            .into());
                        }
                        addresses.push(address.as_str());
                    }
                }
            }
            builder = builder.job(job, addresses);
        }
        Ok(builder.build()?)
    }
}

impl Default for KubernetesClusterResolver {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for KubernetesClusterResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubernetesClusterResolver")
            .field("jobs", &self.jobs)
            .field("port", &self.port)
            .field("rpc_layer", &self.overrides.rpc_layer)
            .field("task_type", &self.overrides.task_type)
            .field("task_id", &self.overrides.task_id)
            .field("namespace", &self.namespace)
            .field("address", &self.address)
            .field("wait_for_running", &self.wait_for_running)
            .field("request_timeout", &self.request_timeout)
            .field(
                "client",
                &match self.client {
                    ClientSource::Injected(_) => "injected",
                    ClientSource::Inferred(_) => "in-cluster, else kubeconfig",
                },
            )
            .finish()
    }
}

/// The first pause of [`with_wait_for_running`](KubernetesClusterResolver::with_wait_for_running)'s
/// polling, and the longest: quick when a pod is about to start, and at most one listing per
/// few seconds against the API server when it is not.
const WAIT_FIRST: Duration = Duration::from_millis(250);
const WAIT_MAX: Duration = Duration::from_secs(5);

/// Which selected pods a spec is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Members {
    /// Every selected pod, each of which must be running with its IP.
    AllRunning,
    /// The selected pods running with their IP; the others are left out.
    #[cfg_attr(not(feature = "watch"), allow(dead_code))]
    RunningOnly,
}

/// The pods one selector of one job matched.
struct Listing<'a> {
    job: &'a str,
    selector: &'a str,
    tasks: Vec<PodTask>,
}

/// `GET /api/v1/namespaces/{namespace}/pods?labelSelector={selector}`, within `timeout`.
async fn list_pods(
    api: &Api<Pod>,
    namespace: &str,
    selector: &str,
    timeout: Duration,
) -> Result<Vec<Pod>, crate::Error> {
    let operation =
        || format!("listing pods in namespace {namespace:?} with label selector {selector:?}");
    match tokio::time::timeout(timeout, api.list(&ListParams::default().labels(selector))).await {
        Err(_) => Err(crate::Error::Timeout {
            operation: operation(),
            timeout,
        }),
        Ok(Err(kube::Error::Api(status))) => Err(crate::Error::HttpStatus {
            operation: operation(),
            status: status.code,
            message: status.message,
        }),
        Ok(Err(e)) => Err(crate::Error::Request {
            operation: operation(),
            source: Box::new(e),
        }),
        Ok(Ok(list)) => Ok(list.items),
    }
}

/// Whether an error means "pods not ready yet", which waiting may cure.
fn is_not_ready(error: &crate::Error) -> bool {
    matches!(
        error,
        crate::Error::Kubernetes(Error::PodsNotRunning { .. } | Error::PodWithoutAddress { .. })
    )
}

#[async_trait]
impl ClusterResolver for KubernetesClusterResolver {
    /// Lists the pods of every selector again (in the namespace, sorted by name) and returns
    /// one task per pod; fails, or with [`with_wait_for_running`](Self::with_wait_for_running) waits,
    /// while a selected pod is not running.
    async fn cluster_spec(&self) -> Result<ClusterSpec, crate::Error> {
        let client = self.client.client(self.request_timeout).await?;
        let namespace = self.namespace_of(&client);
        let Some(limit) = self.wait_for_running else {
            let listings = self
                .list_jobs(&client, &namespace, self.request_timeout)
                .await?;
            return self.spec_of(&namespace, &listings, Members::AllRunning);
        };
        let started = Instant::now();
        let mut backoff = Backoff::new(WAIT_FIRST, WAIT_MAX);
        loop {
            let remaining = limit.saturating_sub(started.elapsed());
            let timeout = self.request_timeout.min(remaining.max(WAIT_FIRST));
            let listings = self.list_jobs(&client, &namespace, timeout).await?;
            match self.spec_of(&namespace, &listings, Members::AllRunning) {
                Err(e) if is_not_ready(&e) => {
                    let remaining = limit.saturating_sub(started.elapsed());
                    if remaining.is_zero() {
                        return Err(match e {
                            crate::Error::Kubernetes(Error::PodsNotRunning {
                                namespace,
                                pods,
                                ..
                            }) => Error::PodsNotRunning {
                                namespace,
                                pods,
                                waited: Some(started.elapsed()),
                            }
                            .into(),
                            other => other,
                        });
                    }
                    tokio::time::sleep(backoff.pause(remaining)).await;
                }
                result => return result,
            }
        }
    }

    /// The address of task `task_id` of job `task_type` (each falling back to the resolver's
    /// own), with the RPC layer; `""` without both, as TensorFlow (and then nothing is listed).
    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, crate::Error> {
        let task_type = task_type.or(self.overrides.task_type.as_deref());
        listed_master(self, &self.overrides, task_type, task_id, rpc_layer).await
    }

    override_accessors!(task_type, task_id, rpc_layer);
}
