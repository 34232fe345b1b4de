//! [`Error`]: why the Indexed Job resolver cannot build the cluster from a pod's environment.

use cluster_spec::__private::quote::quote;

/// What the Indexed Job resolver
/// ([`KubernetesIndexedJobClusterResolver`](crate::KubernetesIndexedJobClusterResolver)) finds
/// wrong with the environment a pod was given. Each message names the variable, its value, and
/// the Kubernetes object to fix (`fix`), since the variables come from a manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A variable the resolver needs is not set.
    #[error("environment variable {variable} is not set: {fix}")]
    Missing {
        /// The variable, e.g. `JOB_COMPLETION_INDEX`.
        variable: String,
        /// What sets it: the Kubernetes object or manifest field to fix.
        fix: String,
    },
    /// A variable is set to a value the resolver cannot use.
    #[error("environment variable {variable}={} is invalid: {reason}; {fix}", quote(.value, 0))]
    Invalid {
        /// The variable.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
        /// What sets it: the Kubernetes object or manifest field to fix.
        fix: String,
    },
}
