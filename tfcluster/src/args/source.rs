//! Where a command's cluster comes from: `--cluster` (JSON inline or a file) or `--from` a
//! resolver; shared by `serve`, `connect`, `resolve` and `run`.

use anyhow::{Context as _, anyhow};
use cluster_resolver::WatchClusterResolver;
use cluster_resolver::watch::{self, ClusterStream, WatchOptions};
use cluster_resolver::{
    ClusterResolver, Env, KubernetesIndexedJobClusterResolver, SageMakerClusterResolver,
    SimpleClusterResolver, SlurmClusterResolver, TfConfigClusterResolver, auto_detect,
    cluster_file,
};
use cluster_spec::ClusterSpec;

use crate::args::rendezvous::RdzvSourceArgs;
use crate::failure::Failure;
use crate::input::{file_arg, read_json_or_file};

/// A cluster source of `--from`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum SourceKind {
    /// The first complete source of TF_CONFIG, Slurm, SageMaker, Open MPI, a Kubernetes
    /// Indexed Job (and, with Kubernetes support, any Kubernetes pod).
    Auto,
    /// The TF_CONFIG variable.
    TfConfig,
    /// A Slurm job step (SLURM_* variables).
    Slurm,
    /// SageMaker (SM_HOSTS, SM_CURRENT_HOST).
    Sagemaker,
    /// A Kubernetes Indexed Job's (or JobSet's) pod, from its environment alone (no API
    /// access): JOB_COMPLETION_INDEX, HOSTNAME (JOB-INDEX), and from the manifest
    /// TFCLUSTER_K8S_COMPLETIONS (spec.completions), TFCLUSTER_K8S_SUBDOMAIN (the headless
    /// Service), optional TFCLUSTER_K8S_NAMESPACE, TFCLUSTER_K8S_PORT (2222; or --k8s-port),
    /// TFCLUSTER_K8S_LAYOUT (or --k8s-layout); a JobSet's TFCLUSTER_K8S_REPLICATED_JOBS
    /// (chief=1,ps=2,worker=4). Task I is JOB-I.SUBDOMAIN:PORT.
    K8sIndexed,
    /// A file (--file): a TF_CONFIG document (with "cluster" and "task"), or a cluster spec.
    File,
    /// The running round of an elastic job (`run --rdzv`): --rdzv `HOST[:PORT]` or
    /// `etcd://HOST[:PORT],...`, --rdzv-id JOB.
    /// Observed, not joined: the job is not changed.
    Rendezvous,
    /// Kubernetes pods: job `worker` = pods labelled `job-name=tensorflow` (TensorFlow's
    /// default), or the --k8s-job mappings; port --k8s-port (8470).
    #[cfg(feature = "kubernetes")]
    Kubernetes,
    /// A GCE instance group: --gce-project, --gce-zone, --gce-group, --gce-port.
    #[cfg(feature = "gce")]
    Gce,
    /// A Cloud TPU: --tpu NAME (project and zone from the metadata server).
    #[cfg(feature = "gce")]
    Tpu,
}

/// Options of the sources that need more than the environment.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct SourceArgs {
    /// With --from file: the file.
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// With --from kubernetes: JOB=SELECTOR, e.g. `worker=job-name=tf-worker` (repeatable).
    #[cfg(feature = "kubernetes")]
    #[arg(long = "k8s-job")]
    pub(crate) k8s_jobs: Vec<String>,
    /// With --from kubernetes (default 8470) or k8s-indexed (default TFCLUSTER_K8S_PORT, else
    /// 2222): the port every task serves on.
    #[arg(long = "k8s-port")]
    pub(crate) k8s_port: Option<u16>,
    /// With --from k8s-indexed: the jobs of the first indices, the rest workers, e.g.
    /// `chief=1,ps=2` (in place of TFCLUSTER_K8S_LAYOUT).
    #[arg(long = "k8s-layout")]
    pub(crate) k8s_layout: Option<String>,
    /// With --from gce: the project.
    #[cfg(feature = "gce")]
    #[arg(long)]
    pub(crate) gce_project: Option<String>,
    /// With --from gce: the zone.
    #[cfg(feature = "gce")]
    #[arg(long)]
    pub(crate) gce_zone: Option<String>,
    /// With --from gce: the instance group.
    #[cfg(feature = "gce")]
    #[arg(long)]
    pub(crate) gce_group: Option<String>,
    /// With --from gce: the port every instance serves on.
    #[cfg(feature = "gce")]
    #[arg(long)]
    pub(crate) gce_port: Option<u16>,
    /// With --from tpu: the TPU's name.
    #[cfg(feature = "gce")]
    #[arg(long)]
    pub(crate) tpu: Option<String>,
}

/// The cluster options of `serve` and `connect`.
#[derive(clap::Args)]
pub(crate) struct ClusterArgs {
    /// The cluster: TF_CONFIG's "cluster" JSON inline, or a file holding it (- for stdin).
    #[arg(long, conflicts_with = "from")]
    pub(crate) cluster: Option<String>,
    /// Find the cluster (and this task) from the environment instead.
    #[arg(long, value_enum)]
    pub(crate) from: Option<SourceKind>,
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    #[command(flatten)]
    pub(crate) rendezvous: RdzvSourceArgs,
}

/// The resolver a source names, reading the process environment; `rendezvous` holds the
/// flags of `--from rendezvous` where the command has them.
pub(crate) async fn resolver(
    from: SourceKind,
    args: &SourceArgs,
    rendezvous: Option<&RdzvSourceArgs>,
) -> Result<Box<dyn ClusterResolver>, Failure> {
    let env = Env::process();
    Ok(match from {
        SourceKind::Auto => auto_detect(&env).await?,
        SourceKind::TfConfig => Box::new(TfConfigClusterResolver::new(env)),
        SourceKind::Slurm => Box::new(SlurmClusterResolver::new(env)),
        SourceKind::Sagemaker => Box::new(SageMakerClusterResolver::new(env)),
        SourceKind::K8sIndexed => Box::new(k8s_indexed(env, args)),
        SourceKind::File => file(args.file.as_deref())?,
        SourceKind::Rendezvous => Box::new(RdzvSourceArgs::watcher(rendezvous).await?),
        #[cfg(feature = "kubernetes")]
        SourceKind::Kubernetes => Box::new(kubernetes(args)?),
        #[cfg(feature = "gce")]
        SourceKind::Gce => gce(args)?,
        #[cfg(feature = "gce")]
        SourceKind::Tpu => Box::new(cluster_resolver::TpuClusterResolver::new(
            args.tpu
                .clone()
                .ok_or_else(|| missing("tpu", "--tpu NAME"))?,
        )),
    })
}

/// A TF_CONFIG document (it has a "cluster" key) or a bare cluster spec, from a file.
fn file(path: Option<&str>) -> Result<Box<dyn ClusterResolver>, Failure> {
    let (text, origin) = read_json_or_file(file_path(path)?)?;
    Ok(cluster_file::resolver(&text).context(origin)?)
}

fn file_path(path: Option<&str>) -> Result<&str, Failure> {
    path.ok_or_else(|| anyhow!("--from file needs --file PATH").into())
}

/// `--from k8s-indexed`, with `--k8s-port` and `--k8s-layout` over the manifest's variables.
fn k8s_indexed(env: Env, args: &SourceArgs) -> KubernetesIndexedJobClusterResolver {
    let mut resolver = KubernetesIndexedJobClusterResolver::new(env);
    if let Some(port) = args.k8s_port {
        resolver = resolver.with_port(port);
    }
    if let Some(layout) = &args.k8s_layout {
        resolver = resolver.with_layout(layout.clone());
    }
    resolver
}

#[cfg(feature = "kubernetes")]
fn kubernetes(args: &SourceArgs) -> Result<cluster_resolver::KubernetesClusterResolver, Failure> {
    let mut resolver = cluster_resolver::KubernetesClusterResolver::new();
    for mapping in &args.k8s_jobs {
        let (job, selector) = mapping
            .split_once('=')
            .ok_or_else(|| anyhow!("--k8s-job {mapping:?}: expected JOB=SELECTOR"))?;
        resolver = resolver.with_job(job, [selector]);
    }
    if let Some(port) = args.k8s_port {
        resolver = resolver.with_port(port);
    }
    Ok(resolver)
}

impl ClusterArgs {
    /// The resolver these options name and the cluster it finds.
    pub(crate) async fn resolve(&self) -> Result<(Box<dyn ClusterResolver>, ClusterSpec), Failure> {
        let resolver = self.resolver().await?;
        let spec = resolver.cluster_spec().await?;
        Ok((resolver, spec))
    }

    /// The cluster as it changes (`connect --follow`): a cluster file (`--cluster PATH`,
    /// `--from file`) watched on disk, Kubernetes pods watched through the API, an elastic
    /// job's rounds through its rendezvous's long poll, any other source read again every
    /// `options.interval` (inline JSON never changes).
    pub(crate) async fn watch(&self, options: WatchOptions) -> Result<ClusterStream, Failure> {
        let cluster_file = self.cluster.as_deref().and_then(file_arg);
        match (cluster_file, self.from) {
            (Some(path), _) => Ok(watch::file(path, options)),
            (None, Some(SourceKind::File)) => Ok(watch::file(
                file_path(self.source.file.as_deref())?,
                options,
            )),
            (None, Some(SourceKind::Rendezvous)) => {
                let watcher = RdzvSourceArgs::watcher(Some(&self.rendezvous)).await?;
                Ok(std::sync::Arc::new(watcher).watch(options))
            }
            #[cfg(feature = "kubernetes")]
            (None, Some(SourceKind::Kubernetes)) => {
                Ok(std::sync::Arc::new(kubernetes(&self.source)?).watch(options))
            }
            _ => {
                let resolver: std::sync::Arc<dyn ClusterResolver> = self.resolver().await?.into();
                Ok(watch::poll(resolver, options))
            }
        }
    }

    /// The resolver these options name: `--cluster` as a fixed spec, or `--from`.
    pub(crate) async fn resolver(&self) -> Result<Box<dyn ClusterResolver>, Failure> {
        match (&self.cluster, self.from) {
            (Some(cluster), _) => {
                let (text, origin) = read_json_or_file(cluster)?;
                let spec = ClusterSpec::from_json(&text).context(origin)?;
                Ok(Box::new(SimpleClusterResolver::new(spec)))
            }
            (None, Some(from)) => resolver(from, &self.source, Some(&self.rendezvous)).await,
            (None, None) => Err(anyhow!(
                "give the cluster with --cluster JSON|FILE or --from SOURCE (see --help)"
            )
            .into()),
        }
    }
}

#[cfg(feature = "gce")]
fn gce(args: &SourceArgs) -> Result<Box<dyn ClusterResolver>, Failure> {
    let need = "--gce-project, --gce-zone, --gce-group and --gce-port";
    Ok(Box::new(cluster_resolver::GceClusterResolver::new(
        args.gce_project
            .clone()
            .ok_or_else(|| missing("gce", need))?,
        args.gce_zone.clone().ok_or_else(|| missing("gce", need))?,
        args.gce_group.clone().ok_or_else(|| missing("gce", need))?,
        args.gce_port.ok_or_else(|| missing("gce", need))?,
    )))
}

#[cfg(feature = "gce")]
fn missing(source: &str, what: &str) -> Failure {
    anyhow!("--from {source} needs {what}").into()
}
