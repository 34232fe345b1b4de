//! [`KubernetesIndexedJobClusterResolver`]: the cluster of a Kubernetes Indexed Job (or a
//! JobSet) from the environment its pods are given, with no access to the Kubernetes API.
//!
//! An Indexed Job (`completionMode: Indexed`) gives each pod its index as
//! `JOB_COMPLETION_INDEX` and the host name `<job>-<index>`; with the pod template's
//! `subdomain` naming a headless Service, every pod is reachable at
//! `<job>-<index>.<subdomain>` (`<job>-<index>.<subdomain>.<namespace>.svc` from another
//! namespace). The job's size is not in any variable Kubernetes sets, so the manifest passes
//! it down, with the Service's name:
//!
//! ```yaml
//! apiVersion: v1
//! kind: Service
//! metadata: {name: train}            # the headless Service: the pods' subdomain
//! spec: {clusterIP: None, selector: {job-name: train}}
//! ---
//! apiVersion: batch/v1
//! kind: Job
//! metadata: {name: train}
//! spec:
//!   completionMode: Indexed
//!   completions: 4
//!   parallelism: 4
//!   template:
//!     spec:
//!       subdomain: train             # = the Service's name
//!       restartPolicy: Never
//!       containers:
//!       - name: tf
//!         image: my-tf-image
//!         command: [tfcluster, run, --from, k8s-indexed, --, python, train.py]
//!         env:
//!         - {name: TFCLUSTER_K8S_COMPLETIONS, value: "4"}      # = spec.completions
//!         - {name: TFCLUSTER_K8S_SUBDOMAIN, value: train}      # = template.spec.subdomain
//!         - {name: TFCLUSTER_K8S_LAYOUT, value: "chief=1"}     # optional
//!         - name: TFCLUSTER_K8S_NAMESPACE                      # optional: FQDNs
//!           valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
//! ```
//!
//! | variable | set by | meaning |
//! |---|---|---|
//! | `JOB_COMPLETION_INDEX` | Kubernetes (Indexed Jobs) | this pod's index |
//! | `HOSTNAME` | Kubernetes | `<job>-<index>`: the job's name is read from it |
//! | `TFCLUSTER_K8S_COMPLETIONS` | the manifest (`spec.completions`) | the number of pods |
//! | `TFCLUSTER_K8S_SUBDOMAIN` | the manifest (`template.spec.subdomain`) | the headless Service |
//! | `TFCLUSTER_K8S_NAMESPACE` | the manifest (optional, downward API) | names become `<host>.<subdomain>.<ns>.svc` |
//! | `TFCLUSTER_K8S_PORT` | the manifest (optional) | every task's port, else 2222 ([`with_port`](KubernetesIndexedJobClusterResolver::with_port) first) |
//! | `TFCLUSTER_K8S_LAYOUT` | the manifest (optional) | `chief=1,ps=2`: jobs on the first indices, the rest `worker` ([`with_layout`](KubernetesIndexedJobClusterResolver::with_layout) first) |
//! | `TFCLUSTER_K8S_REPLICATED_JOBS` | the manifest (JobSet) | `chief=1,ps=2,worker=4`: a JobSet's replicated jobs and their replicas |
//!
//! Our variables carry the `TFCLUSTER_` prefix because they are ours, not Kubernetes': a
//! variable named like a Kubernetes one (`COMPLETIONS`) could collide with an image's own or
//! with one Kubernetes adds later, and the prefix says which program reads them.
//!
//! **JobSet.** With `TFCLUSTER_K8S_REPLICATED_JOBS`, the pods are a JobSet's whose replicated
//! jobs are TensorFlow jobs (`chief`, `ps`, `worker`, `evaluator`), each child Job holding one
//! pod (`completions: 1`): JobSet names them `<jobset>-<replicatedjob>-<jobindex>-0` in the
//! subdomain `TFCLUSTER_K8S_SUBDOMAIN`, else the JobSet's name (JobSet's default). Task `j` of
//! job `ps` is `<jobset>-ps-<j>-0`. The JobSet's name and this pod's task are read from
//! `HOSTNAME`. (A JobSet of one replicated job with one replica and `completions: N` is an
//! Indexed Job named `<jobset>-<replicatedjob>-0`: use the Indexed Job form.)
//!
//! **Auto-detection** picks this resolver when `JOB_COMPLETION_INDEX` and either
//! `TFCLUSTER_K8S_COMPLETIONS` or `TFCLUSTER_K8S_REPLICATED_JOBS` are set. One without the
//! other is not this source (a plain Indexed Job's pod sets the first, and a pod of another
//! kind may carry a copied manifest's variables); the "no cluster found" message names the
//! missing one.
//!
//! Every error names the variable, its value and the Kubernetes object to fix.
//!
//! # Differences from TensorFlow
//!
//! TensorFlow has no such resolver: on Kubernetes it lists pods through the API (its
//! `KubernetesClusterResolver`, which needs a role to list pods) or reads a `TF_CONFIG` an
//! operator wrote. This one needs neither.

use async_trait::async_trait;
use cluster_spec::ClusterSpec;
use cluster_spec::job_counts::{self, JobCountsError};

pub use crate::error::k8s_indexed::Error;
use crate::overrides::{Overrides, override_methods};
use crate::tf_config::TfConfig;
use crate::{ClusterResolver, Env};

/// Kubernetes sets it in every pod of an Indexed Job.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";
/// The pod's host name, `<job>-<index>`.
pub const HOSTNAME: &str = "HOSTNAME";
/// The Job's `spec.completions`, passed down by the manifest.
pub const COMPLETIONS: &str = "TFCLUSTER_K8S_COMPLETIONS";
/// The pod template's `subdomain`: the headless Service's name.
pub const SUBDOMAIN: &str = "TFCLUSTER_K8S_SUBDOMAIN";
/// Optional: the namespace, for names `<host>.<subdomain>.<namespace>.svc`.
pub const NAMESPACE: &str = "TFCLUSTER_K8S_NAMESPACE";
/// Optional: the port every task serves on.
pub const PORT: &str = "TFCLUSTER_K8S_PORT";
/// Optional: `chief=1,ps=2`, the jobs of the first indices.
pub const LAYOUT: &str = "TFCLUSTER_K8S_LAYOUT";
/// A JobSet's replicated jobs and their replicas, `chief=1,ps=2,worker=4`.
pub const REPLICATED_JOBS: &str = "TFCLUSTER_K8S_REPLICATED_JOBS";

/// The most pods: Kubernetes' limit on an Indexed Job's completions (and parallelism).
pub const MAX_PODS: u32 = 100_000;

const FIX_INDEXED: &str = "run the pods as an Indexed Job (spec.completionMode: Indexed), which sets it, and do not set it in the pod template's env";
const FIX_HOSTNAME: &str =
    "Kubernetes names an Indexed Job's pods <job>-<index>; do not set the pod template's hostname";
const FIX_HOSTNAME_JOBSET: &str = "JobSet names its pods <jobset>-<replicatedjob>-<jobindex>-<podindex> when spec.network.enableDNSHostnames is true; do not set the pod template's hostname";

const FIX_COMPLETIONS: &str = "set it in the pod template's env to the Job's spec.completions";
const FIX_SUBDOMAIN: &str = "set it in the pod template's env to the pod template's spec.subdomain, the name of a headless Service (clusterIP: None) selecting the Job's pods";
const FIX_NAMESPACE: &str =
    "set it from the downward API (fieldRef: metadata.namespace) or leave it out";
const FIX_PORT: &str = "set it in the pod template's env to the port the tasks serve on (1-65535)";
const FIX_LAYOUT: &str = "set it in the pod template's env to JOB=COUNT entries (e.g. chief=1,ps=2) over jobs other than worker, fewer tasks than TFCLUSTER_K8S_COMPLETIONS";
const FIX_REPLICATED: &str = "set it in the pod template's env to the JobSet's replicatedJobs as NAME=REPLICAS (e.g. chief=1,ps=2,worker=4)";

/// Resolves an Indexed Job's (or a JobSet's) cluster from the pod's environment alone (see the
/// [module docs](self) for the variables and the manifest that sets them): every index is a
/// task at `<job>-<index>.<subdomain>:<port>`, the first indices in the jobs of the layout, the
/// rest `worker`, and this pod is the task of its own index. The variables are read again at
/// every call; the RPC layer is `grpc`.
///
/// `with_task_type`, `with_task_id` and `with_rpc_layer` override what the index gives.
///
/// ```
/// use cluster_resolver::{ClusterResolver, Env, KubernetesIndexedJobClusterResolver};
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let env = Env::from_iter([
///     ("JOB_COMPLETION_INDEX", "1"),
///     ("HOSTNAME", "train-1"),
///     ("TFCLUSTER_K8S_COMPLETIONS", "4"),
///     ("TFCLUSTER_K8S_SUBDOMAIN", "train"),
///     ("TFCLUSTER_K8S_LAYOUT", "chief=1,ps=1"),
/// ]);
/// let resolver = KubernetesIndexedJobClusterResolver::new(env);
/// let spec = resolver.cluster_spec().await?;
/// assert_eq!(
///     spec.to_json(),
///     r#"{"chief":["train-0.train:2222"],"ps":["train-1.train:2222"],"worker":["train-2.train:2222","train-3.train:2222"]}"#
/// );
/// assert_eq!((resolver.task_type().as_deref(), resolver.task_id()), (Some("ps"), Some(0)));
/// assert_eq!(resolver.master(None, None, None).await?, "grpc://train-1.train:2222");
///
/// // A pod not of an Indexed Job.
/// let env = Env::from_iter([("HOSTNAME", "train-1-x7k2p"), ("TFCLUSTER_K8S_COMPLETIONS", "4")]);
/// let err = KubernetesIndexedJobClusterResolver::new(env).tf_config().unwrap_err();
/// assert!(err.to_string().starts_with("environment variable JOB_COMPLETION_INDEX is not set: run the pods as an Indexed Job"));
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct KubernetesIndexedJobClusterResolver {
    env: Env,
    port: Option<u16>,
    layout: Option<String>,
    overrides: Overrides,
}

impl KubernetesIndexedJobClusterResolver {
    /// The port of every task unless told otherwise, as the Slurm resolver's.
    pub const DEFAULT_PORT: u16 = 2222;

    /// A resolver reading the pod's variables from `env`.
    pub fn new(env: Env) -> Self {
        Self {
            env,
            port: None,
            layout: None,
            overrides: Overrides::default(),
        }
    }

    /// Sets the port every task serves on, in place of `TFCLUSTER_K8S_PORT` and 2222.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Sets the layout (`chief=1,ps=2`), in place of `TFCLUSTER_K8S_LAYOUT`; it is checked
    /// when the cluster is resolved.
    pub fn with_layout(mut self, layout: impl Into<String>) -> Self {
        self.layout = Some(layout.into());
        self
    }

    override_methods!(task_type, task_id, rpc_layer, environment);

    /// The TF_CONFIG document of this pod: the cluster of every index, this pod's task, RPC
    /// layer `grpc`, with this resolver's overrides in place.
    ///
    /// # Errors
    ///
    /// [`Error`] (as the crate's [`Error::K8sIndexed`](crate::Error::K8sIndexed)) naming the
    /// variable, its value and the Kubernetes object to fix; a variable that is not UTF-8 is
    /// [`crate::Error::NotUnicode`].
    pub fn tf_config(&self) -> Result<TfConfig, crate::Error> {
        let pod = Pod::read(&self.env)?;
        let port = match self.port {
            Some(port) => port,
            None => port_from(&self.env)?,
        };
        let (cluster, task_type, task_id) = match self.env.get(REPLICATED_JOBS)? {
            Some(jobs) => job_set(&self.env, &pod, &jobs, port)?,
            None => indexed_job(&self.env, &pod, self.layout.as_deref(), port)?,
        };
        let config = TfConfig::new(cluster)
            .with_task(task_type, task_id)
            .with_rpc_layer("grpc");
        Ok(self.overrides.apply(config))
    }
}

/// What Kubernetes tells a pod about itself.
struct Pod {
    index: u32,
    index_text: String,
    /// The host name up to its first dot.
    host: String,
}

impl Pod {
    fn read(env: &Env) -> Result<Self, crate::Error> {
        let index_text = required(env, JOB_COMPLETION_INDEX, FIX_INDEXED)?;
        let index = number(&index_text).ok_or_else(|| {
            invalid(
                JOB_COMPLETION_INDEX,
                &index_text,
                "not a non-negative integer".to_owned(),
                FIX_INDEXED,
            )
        })?;
        let hostname = required(env, HOSTNAME, FIX_HOSTNAME)?;
        let host = hostname.split('.').next().unwrap_or_default().to_owned();
        Ok(Self {
            index,
            index_text,
            host,
        })
    }
}

/// One Indexed Job: `<job>-<i>` for every index, the layout's jobs first.
fn indexed_job(
    env: &Env,
    pod: &Pod,
    layout: Option<&str>,
    port: u16,
) -> Result<(ClusterSpec, String, u32), crate::Error> {
    let completions_text = required(env, COMPLETIONS, FIX_COMPLETIONS)?;
    let completions = count(COMPLETIONS, &completions_text, FIX_COMPLETIONS)?;
    if pod.index >= completions {
        return Err(invalid(
            JOB_COMPLETION_INDEX,
            &pod.index_text,
            format!(
                "{COMPLETIONS} is {completions}, so indices run from 0 to {}",
                completions - 1
            ),
            "set TFCLUSTER_K8S_COMPLETIONS to the Job's spec.completions",
        ));
    }
    let job = pod
        .host
        .strip_suffix(pod.index_text.as_str())
        .and_then(|rest| rest.strip_suffix('-'))
        .filter(|job| is_dns_label(job))
        .ok_or_else(|| {
            invalid(
                HOSTNAME,
                &pod.host,
                format!(
                    "it is not <job>-{} (<job>-<{JOB_COMPLETION_INDEX}>), the host name of an \
                     Indexed Job's pod",
                    pod.index_text
                ),
                FIX_HOSTNAME,
            )
        })?;
    let layout_text = match layout {
        Some(layout) => Some(layout.to_owned()),
        None => env.get(LAYOUT)?,
    };
    let layout = parse_layout(layout_text.as_deref().unwrap_or(""), completions)?;
    let domain = domain(env, None)?;
    let mut builder = ClusterSpec::builder();
    let mut first = 0;
    let mut own = None;
    let jobs = layout
        .iter()
        .map(|(job, n)| (job.as_str(), *n))
        .chain(std::iter::once((
            "worker",
            completions - placed_tasks(&layout),
        )));
    for (name, n) in jobs.filter(|&(_, n)| n > 0) {
        let end = first + n;
        if (first..end).contains(&pod.index) {
            own = Some((name.to_owned(), pod.index - first));
        }
        builder = builder.job(
            name,
            (first..end).map(|i| format!("{job}-{i}{domain}:{port}")),
        );
        first = end;
    }
    let cluster = builder
        .build()
        .map_err(|e| invalid(HOSTNAME, &pod.host, e.to_string(), FIX_HOSTNAME))?;
    // The jobs cover 0..completions, and the index is below it.
    let (task_type, task_id) = own.unwrap_or_default();
    Ok((cluster, task_type, task_id))
}

/// The tasks a layout places before the workers.
fn placed_tasks(layout: &[(String, u32)]) -> u32 {
    layout.iter().map(|(_, n)| n).sum()
}

/// `chief=1,ps=2`: jobs other than `worker`, fewer tasks than `completions` in all.
fn parse_layout(text: &str, completions: u32) -> Result<Vec<(String, u32)>, crate::Error> {
    let mut placed = 0u64;
    let bad = |reason: String| invalid(LAYOUT, text, reason, FIX_LAYOUT);
    job_counts::parse(text, |entry| {
        if entry.job == "worker" {
            return Err(Bad::Reason(format!(
                "worker at byte {}: workers are the indices the layout leaves; leave it out",
                entry.pos
            )));
        }
        placed += u64::from(entry.count);
        if placed > u64::from(completions) {
            return Err(Bad::Reason(format!(
                "it places {placed} tasks, more than the {completions} pods of {COMPLETIONS}"
            )));
        }
        Ok(())
    })
    .map_err(|e| match e {
        Bad::Reason(reason) => bad(reason),
        Bad::Syntax(e) => bad(e.to_string()),
    })
}

/// A rule of ours, or the `JOB=COUNT` syntax, broken by a layout.
enum Bad {
    Reason(String),
    Syntax(JobCountsError),
}

impl From<JobCountsError> for Bad {
    fn from(e: JobCountsError) -> Self {
        Self::Syntax(e)
    }
}

/// A JobSet whose replicated jobs are TensorFlow jobs, one pod per child Job.
fn job_set(
    env: &Env,
    pod: &Pod,
    jobs_text: &str,
    port: u16,
) -> Result<(ClusterSpec, String, u32), crate::Error> {
    let mut total = 0u64;
    let bad = |reason: String| invalid(REPLICATED_JOBS, jobs_text, reason, FIX_REPLICATED);
    let jobs = job_counts::parse(jobs_text, |entry| {
        if entry.job.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(Bad::Reason(format!(
                "{} at byte {} is no Kubernetes name (lower case only)",
                entry.job, entry.pos
            )));
        }
        total += u64::from(entry.count);
        if total > u64::from(MAX_PODS) {
            return Err(Bad::Reason(format!(
                "it counts {total} pods, more than Kubernetes' {MAX_PODS}"
            )));
        }
        Ok(())
    })
    .map_err(|e| match e {
        Bad::Reason(reason) => bad(reason),
        Bad::Syntax(e) => bad(e.to_string()),
    })?;
    if jobs.is_empty() {
        return Err(bad("it names no replicated job".to_owned()));
    }
    // `<jobset>-<replicatedjob>-<jobindex>-<podindex>`: the JobSet's name may hold dashes, a
    // replicated job's (a TensorFlow job name) may not.
    let not_ours = |why: String| invalid(HOSTNAME, &pod.host, why, FIX_HOSTNAME_JOBSET);
    let mut parts = pod.host.rsplitn(4, '-');
    let (pod_index, job_index, job, job_set) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    if !is_dns_label(job_set) || pod_index != pod.index_text {
        return Err(not_ours(format!(
            "it is not <jobset>-<replicatedjob>-<jobindex>-{} (the host name of a JobSet's pod)",
            pod.index_text
        )));
    }
    if pod.index != 0 {
        return Err(invalid(
            JOB_COMPLETION_INDEX,
            &pod.index_text,
            "with TFCLUSTER_K8S_REPLICATED_JOBS each child Job holds one pod, index 0".to_owned(),
            "set completions: 1 and parallelism: 1 in every replicated job's template",
        ));
    }
    let Some(replicas) = jobs.iter().find(|(j, _)| j == job).map(|(_, n)| *n) else {
        return Err(not_ours(format!(
            "its replicated job {job:?} is not one of {REPLICATED_JOBS}={jobs_text:?}"
        )));
    };
    let task_id = number(job_index).filter(|&j| j < replicas).ok_or_else(|| {
        not_ours(format!(
            "its job index {job_index:?} is not below the {replicas} replicas of {job} in \
                 {REPLICATED_JOBS}"
        ))
    })?;
    let domain = domain(env, Some(job_set))?;
    let mut builder = ClusterSpec::builder();
    for (name, n) in &jobs {
        builder = builder.job(
            name,
            (0..*n).map(|j| format!("{job_set}-{name}-{j}-0{domain}:{port}")),
        );
    }
    let cluster = builder
        .build()
        .map_err(|e| invalid(HOSTNAME, &pod.host, e.to_string(), FIX_HOSTNAME_JOBSET))?;
    Ok((cluster, job.to_owned(), task_id))
}

/// `.<subdomain>` or `.<subdomain>.<namespace>.svc`; a JobSet's subdomain defaults to its name.
fn domain(env: &Env, job_set: Option<&str>) -> Result<String, crate::Error> {
    let subdomain = match (env.get(SUBDOMAIN)?, job_set) {
        (Some(subdomain), _) => subdomain,
        (None, Some(job_set)) => job_set.to_owned(),
        (None, None) => return Err(missing(SUBDOMAIN, FIX_SUBDOMAIN)),
    };
    check_label(SUBDOMAIN, &subdomain, FIX_SUBDOMAIN)?;
    match env.get(NAMESPACE)? {
        None => Ok(format!(".{subdomain}")),
        Some(namespace) => {
            check_label(NAMESPACE, &namespace, FIX_NAMESPACE)?;
            Ok(format!(".{subdomain}.{namespace}.svc"))
        }
    }
}

/// A name as Kubernetes names Jobs, Services and namespaces: lower case letters, digits and
/// `-` inside (RFC 1123), at most 63 bytes.
fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// `value` of `variable` is a Kubernetes name ([`is_dns_label`]).
fn check_label(variable: &str, value: &str, fix: &str) -> Result<(), crate::Error> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(invalid(
            variable,
            value,
            "not a Kubernetes name (lower case letters, digits and '-', at most 63)".to_owned(),
            fix,
        ))
    }
}

/// `TFCLUSTER_K8S_PORT`, else 2222.
fn port_from(env: &Env) -> Result<u16, crate::Error> {
    let Some(text) = env.get(PORT)? else {
        return Ok(KubernetesIndexedJobClusterResolver::DEFAULT_PORT);
    };
    number(&text)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| invalid(PORT, &text, "not a port (1-65535)".to_owned(), FIX_PORT))
}

/// A pod count, 1 to [`MAX_PODS`].
fn count(variable: &str, text: &str, fix: &str) -> Result<u32, crate::Error> {
    number(text)
        .filter(|n| (1..=MAX_PODS).contains(n))
        .ok_or_else(|| {
            invalid(
                variable,
                text,
                format!("not a number of pods from 1 to {MAX_PODS} (Kubernetes' limit)"),
                fix,
            )
        })
}

/// Decimal digits only (`parse` also takes a leading `+`, which no index or count has).
fn number(text: &str) -> Option<u32> {
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse().ok())
        .flatten()
}

fn required(env: &Env, variable: &str, fix: &str) -> Result<String, crate::Error> {
    env.get(variable)?.ok_or_else(|| missing(variable, fix))
}

fn missing(variable: &str, fix: &str) -> crate::Error {
    Error::Missing {
        variable: variable.to_owned(),
        fix: fix.to_owned(),
    }
    .into()
}

fn invalid(variable: &str, value: &str, reason: String, fix: &str) -> crate::Error {
    Error::Invalid {
        variable: variable.to_owned(),
        value: value.to_owned(),
        reason,
        fix: fix.to_owned(),
    }
    .into()
}

#[async_trait]
impl ClusterResolver for KubernetesIndexedJobClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, crate::Error> {
        Ok(self.tf_config()?.cluster)
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, crate::Error> {
        self.tf_config()?.master(task_type, task_id, rpc_layer)
    }

    fn task_type(&self) -> Option<String> {
        self.overrides
            .task_type_or(|| self.tf_config().ok()?.task_type)
    }

    fn task_id(&self) -> Option<u32> {
        self.overrides.task_id_or(|| self.tf_config().ok()?.task_id)
    }

    fn rpc_layer(&self) -> Option<String> {
        self.overrides.rpc_layer_or(|| Some("grpc".to_owned()))
    }

    fn environment(&self) -> String {
        self.overrides.environment()
    }
}

#[cfg(test)]
mod tests;
