//! [`Error`]: why the Kubernetes resolver cannot make tasks of the selected pods.

use std::fmt::Write as _;

use cluster_spec::__private::error_chain::Chain;
use cluster_spec::__private::quote::{excerpt, quote};

/// What the Kubernetes resolver ([`KubernetesClusterResolver`](crate::KubernetesClusterResolver))
/// finds wrong with its client configuration or the pods it selects. Failed API calls are the
/// crate's network errors ([`crate::Error::Timeout`], [`crate::Error::Request`], ...).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither an in-cluster nor a kubeconfig client configuration could be loaded. Both causes
    /// are kept and shown, each with its own causes (so neither is the
    /// [`source`](std::error::Error::source)).
    #[error(
        "cannot configure a Kubernetes client: in-cluster config: {}; kubeconfig: {}",
        Chain(.in_cluster),
        Chain(.kubeconfig)
    )]
    Config {
        /// Why the in-cluster configuration (service account) failed.
        in_cluster: kube::config::InClusterError,
        /// Why the kubeconfig failed.
        kubeconfig: kube::config::KubeconfigError,
    },
    /// Selected pods are not in phase `Running`. With one pod the message is TensorFlow's
    /// (`Pod "p" is not running; phase: "Pending"`); every such pod is listed.
    #[error("{}", pods_not_running(.namespace, .pods, .waited))]
    PodsNotRunning {
        /// The namespace listed.
        namespace: String,
        /// Each pod that is not running and its phase (`"None"` when the pod reports none, as TF).
        pods: Vec<(String, String)>,
        /// How long the resolver waited for them, if it was asked to wait.
        waited: Option<std::time::Duration>,
    },
    /// A running pod does not report the IP the resolver uses.
    #[error(
        "Pod \"{}\" in namespace \"{}\" is running but has no {field}",
        excerpt(.pod, 0),
        excerpt(.namespace, 0)
    )]
    PodWithoutAddress {
        /// The namespace of the pod.
        namespace: String,
        /// The pod.
        pod: String,
        /// The missing field, `status.podIP` or `status.hostIP`.
        field: &'static str,
    },
    /// One pod is matched by two label selectors, which would make it two tasks.
    #[error(
        "Pod \"{}\" in namespace \"{}\" is selected twice: by {} and by {}",
        excerpt(.pod, 0),
        excerpt(.namespace, 0),
        quote(.first, 0),
        quote(.second, 0)
    )]
    PodSelectedTwice {
        /// The namespace of the pod.
        namespace: String,
        /// The pod.
        pod: String,
        /// The first selector that matched it, with its job (`job 'worker': app=tf`).
        first: String,
        /// The second.
        second: String,
    },
}

/// [`Error::PodsNotRunning`]'s message: TensorFlow's sentence per pod, then the namespace and
/// how long the resolver waited.
fn pods_not_running(
    namespace: &str,
    pods: &[(String, String)],
    waited: &Option<std::time::Duration>,
) -> String {
    let mut out = String::new();
    for (i, (pod, phase)) in pods.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(
            out,
            "Pod \"{}\" is not running; phase: \"{}\"",
            excerpt(pod, 0),
            excerpt(phase, 0)
        );
    }
    let _ = write!(out, " (namespace \"{}\"", excerpt(namespace, 0));
    if let Some(waited) = waited {
        let _ = write!(out, ", after waiting {waited:?}");
    }
    out.push(')');
    out
}
