//! Where the Kubernetes client comes from: injected by the caller, or configured on first use,
//! in-cluster first and kubeconfig otherwise.

use std::time::Duration;

use kube::config::KubeConfigOptions;
use tokio::sync::OnceCell;

use super::Error as KubernetesError;
use crate::Error;

/// The client a resolver lists pods with.
pub(super) enum ClientSource {
    /// Given by the caller (tests, or a program that configures kube itself).
    Injected(kube::Client),
    /// Configured from the environment on first use, then kept: the configuration does not
    /// change while a process runs, and re-reading it per call (TensorFlow reloads its
    /// kubeconfig on every `cluster_spec()`) only adds ways to fail.
    Inferred(OnceCell<kube::Client>),
}

impl ClientSource {
    /// The client, configuring it first if needed; configuration is bounded by `timeout`
    /// (a kubeconfig's exec credential plugin is an external program that may hang).
    pub(super) async fn client(&self, timeout: Duration) -> Result<kube::Client, Error> {
        match self {
            Self::Injected(client) => Ok(client.clone()),
            Self::Inferred(cell) => cell
                .get_or_try_init(|| async {
                    tokio::time::timeout(timeout, infer(timeout))
                        .await
                        .map_err(|_| Error::Timeout {
                            operation: "configuring the Kubernetes client".to_owned(),
                            timeout,
                        })?
                })
                .await
                .cloned(),
        }
    }
}

/// The in-cluster configuration (service account token, CA and namespace under
/// `/var/run/secrets/kubernetes.io/serviceaccount/`, API server from `KUBERNETES_SERVICE_HOST`
/// and `KUBERNETES_SERVICE_PORT`) when the process runs in a pod, else the kubeconfig
/// (`$KUBECONFIG` or `~/.kube/config`, its current context).
///
/// This is the reverse of `kube::Config::infer`, which prefers a kubeconfig: inside a pod the
/// service account is what the cluster administrator granted the job, and a kubeconfig that
/// happens to be baked into an image should not override it.
async fn infer(timeout: Duration) -> Result<kube::Client, Error> {
    let mut config = match kube::Config::incluster() {
        Ok(config) => config,
        Err(in_cluster) => kube::Config::from_kubeconfig(&KubeConfigOptions::default())
            .await
            .map_err(|kubeconfig| KubernetesError::Config {
                in_cluster,
                kubeconfig,
            })?,
    };
    // kube's defaults leave the read timeout unset; every call here has a deadline anyway,
    // this makes a stalled connection fail at the transport too.
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    config.reset_reader_on_write = true;
    install_ring_provider();
    kube::Client::try_from(config).map_err(|e| Error::Request {
        operation: "creating the Kubernetes client".to_owned(),
        source: Box::new(e),
    })
}

/// Makes ring rustls's process-wide crypto provider unless one is installed already.
///
/// kube builds its TLS configuration with rustls's process default, which rustls picks by
/// itself only when exactly one provider is compiled in; another crate in the program enabling
/// aws-lc-rs as well would make that a panic. Choosing ring (the provider kube is built with
/// here) first removes the ambiguity and changes nothing when a provider is already chosen.
fn install_ring_provider() {
    // `Err` means a provider is installed already, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
