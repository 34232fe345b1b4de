//! Where a command's cluster comes from: `--cluster` (JSON inline or a file) or `--from` a
//! resolver; shared by `serve`, `connect` and `resolve`.

use cluster_resolver::{
    ClusterResolver, Env, SageMakerClusterResolver, SimpleClusterResolver, SlurmClusterResolver,
    TfConfigClusterResolver, auto_detect,
};
use cluster_spec::ClusterSpec;

use crate::args::{Failure, read_json_or_file};

/// A cluster source of `--from`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum From {
    /// The first complete source of TF_CONFIG, Slurm, SageMaker, Open MPI.
    Auto,
    /// The TF_CONFIG variable.
    TfConfig,
    /// A Slurm job step (SLURM_* variables).
    Slurm,
    /// SageMaker (SM_HOSTS, SM_CURRENT_HOST).
    Sagemaker,
}

/// The cluster options of `serve` and `connect`.
#[derive(clap::Args)]
pub(crate) struct ClusterArgs {
    /// The cluster: TF_CONFIG's "cluster" JSON inline, or a file holding it (- for stdin).
    #[arg(long, conflicts_with = "from")]
    pub(crate) cluster: Option<String>,
    /// Find the cluster (and this task) from the environment instead.
    #[arg(long, value_enum)]
    pub(crate) from: Option<From>,
}

/// The resolver a source names, reading the process environment.
pub(crate) async fn resolver(from: From) -> Result<Box<dyn ClusterResolver>, Failure> {
    let env = Env::process();
    let invalid = |e: cluster_resolver::Error| Failure::Input(e.to_string());
    Ok(match from {
        From::Auto => auto_detect(&env).await.map_err(invalid)?,
        From::TfConfig => Box::new(TfConfigClusterResolver::new(env)),
        From::Slurm => Box::new(SlurmClusterResolver::new(env)),
        From::Sagemaker => Box::new(SageMakerClusterResolver::new(env)),
    })
}

impl ClusterArgs {
    /// The resolver these options name: `--cluster` as a fixed spec, or `--from`.
    pub(crate) async fn resolver(&self) -> Result<Box<dyn ClusterResolver>, Failure> {
        match (&self.cluster, self.from) {
            (Some(cluster), _) => {
                let (text, origin) = read_json_or_file(cluster)?;
                let spec = ClusterSpec::from_json(&text)
                    .map_err(|e| Failure::Input(format!("{origin}: {e}")))?;
                Ok(Box::new(SimpleClusterResolver::new(spec)))
            }
            (None, Some(from)) => resolver(from).await,
            (None, None) => Err(Failure::Input(
                "give the cluster with --cluster JSON|FILE or --from auto|tf-config|slurm|sagemaker"
                    .into(),
            )),
        }
    }
}
