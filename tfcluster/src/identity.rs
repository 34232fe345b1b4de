//! This process's place in its cluster, found from a `--from` source: what `resolve` prints
//! and what `run` hands to the command it starts.

use anyhow::anyhow;
use cluster_resolver::{
    ClusterResolver, ClusterSource, Env, SlurmClusterResolver, detect, format_master_url,
    tf_config_for,
};
use cluster_spec::ClusterSpec;

use crate::args::rendezvous::RdzvSourceArgs;
use crate::args::source::{SourceArgs, SourceKind, resolver};
use crate::failure::Failure;

/// The cluster and this task, as one source resolved them.
pub(crate) struct Identity {
    /// The source that answered (`TF_CONFIG`, `Slurm`, `file PATH`, …).
    pub(crate) source: String,
    pub(crate) spec: ClusterSpec,
    pub(crate) task_type: Option<String>,
    pub(crate) task_id: Option<u32>,
    pub(crate) master: String,
    pub(crate) rpc_layer: Option<String>,
    /// This task's GPUs, where the source decides them (Slurm).
    pub(crate) cuda_visible_devices: Option<String>,
}

/// Resolves `from` against the process environment (and `args`, `rendezvous` for the sources
/// that need more).
pub(crate) async fn identify(
    from: SourceKind,
    args: &SourceArgs,
    rendezvous: Option<&RdzvSourceArgs>,
) -> Result<Identity, Failure> {
    let detected = match from {
        SourceKind::Auto => Some(detect(&Env::process())?),
        SourceKind::TfConfig => Some(ClusterSource::TfConfig),
        SourceKind::Slurm => Some(ClusterSource::Slurm),
        SourceKind::Sagemaker => Some(ClusterSource::SageMaker),
        SourceKind::K8sIndexed => Some(ClusterSource::KubernetesIndexedJob),
        SourceKind::File | SourceKind::Rendezvous => None,
        #[cfg(feature = "kubernetes")]
        SourceKind::Kubernetes => Some(ClusterSource::Kubernetes),
        #[cfg(feature = "gce")]
        SourceKind::Gce | SourceKind::Tpu => None,
    };
    let source = match detected {
        Some(source) => source.to_string(),
        None => match from {
            SourceKind::File => format!("file {}", args.file.as_deref().unwrap_or("")),
            SourceKind::Rendezvous => rendezvous.map_or("rendezvous".into(), |r| r.describe()),
            other => format!("{other:?}"),
        },
    };
    if detected == Some(ClusterSource::Slurm) {
        return slurm(source);
    }
    let resolver: Box<dyn ClusterResolver> = resolver(from, args, rendezvous).await?;
    Ok(Identity {
        spec: resolver.cluster_spec().await?,
        task_type: resolver.task_type(),
        task_id: resolver.task_id(),
        master: resolver.master(None, None, None).await?,
        rpc_layer: resolver.rpc_layer(),
        cuda_visible_devices: None,
        source,
    })
}

impl Identity {
    /// The TF_CONFIG of this task.
    pub(crate) fn tf_config(&self) -> Result<String, Failure> {
        match (&self.task_type, self.task_id) {
            (Some(job), Some(id)) => Ok(tf_config_for(
                &self.spec,
                job,
                id,
                self.rpc_layer.as_deref(),
            )?),
            _ => Err(anyhow!(
                "{} names no task of this process, so there is no TF_CONFIG to write",
                self.source
            )
            .into()),
        }
    }

    /// The variables a TensorFlow process of this task needs: TF_CONFIG, and
    /// CUDA_VISIBLE_DEVICES where the source decides it.
    pub(crate) fn env(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        let mut vars = vec![("TF_CONFIG", self.tf_config()?)];
        if let Some(devices) = &self.cuda_visible_devices {
            vars.push(("CUDA_VISIBLE_DEVICES", devices.clone()));
        }
        Ok(vars)
    }
}

/// A Slurm step, resolved once: the resolver's accessors each resolve the step again, which
/// for millions of tasks is seconds each.
fn slurm(source: String) -> Result<Identity, Failure> {
    let resolver = SlurmClusterResolver::new(Env::process());
    let step = resolver.resolve()?;
    let rpc_layer = resolver.rpc_layer();
    Ok(Identity {
        source,
        master: format_master_url(&step.address(), rpc_layer.as_deref()),
        task_type: Some(step.task_type().to_owned()),
        task_id: Some(step.task_id()),
        cuda_visible_devices: step.cuda_visible_devices().map(str::to_owned),
        rpc_layer,
        spec: step.into_spec(),
    })
}
