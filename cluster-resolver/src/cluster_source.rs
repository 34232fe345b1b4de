//! The sources of cluster information auto-detection checks, named as its messages name them.

use std::fmt;

/// A source of cluster information [`auto_detect`](crate::auto_detect()) checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClusterSource {
    /// The `TF_CONFIG` variable.
    TfConfig,
    /// A Slurm job step.
    Slurm,
    /// An Amazon SageMaker training job.
    SageMaker,
    /// Ranks started by Open MPI's `mpirun` on one node.
    OpenMpi,
    /// A pod of a Kubernetes Indexed Job or JobSet whose manifest passes down its size
    /// ([`k8s_indexed`](crate::k8s_indexed)).
    KubernetesIndexedJob,
    /// A Kubernetes pod (feature `kubernetes`).
    Kubernetes,
}

impl ClusterSource {
    /// Every source, in the order [`detect`](crate::detect) checks them.
    pub const ALL: [ClusterSource; 6] = [
        ClusterSource::TfConfig,
        ClusterSource::Slurm,
        ClusterSource::SageMaker,
        ClusterSource::OpenMpi,
        ClusterSource::KubernetesIndexedJob,
        ClusterSource::Kubernetes,
    ];
}

impl fmt::Display for ClusterSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClusterSource::TfConfig => "TF_CONFIG",
            ClusterSource::Slurm => "Slurm",
            ClusterSource::SageMaker => "SageMaker",
            ClusterSource::OpenMpi => "Open MPI",
            ClusterSource::KubernetesIndexedJob => "Kubernetes Indexed Job",
            ClusterSource::Kubernetes => "Kubernetes",
        })
    }
}
