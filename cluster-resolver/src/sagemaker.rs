//! [`SageMakerClusterResolver`]: the cluster of an Amazon SageMaker training job, from
//! `SM_HOSTS` and `SM_CURRENT_HOST`, as TensorFlow's `SageMakerClusterResolver`.
//!
//! # Differences from TensorFlow
//!
//! - **A current host that is not in `SM_HOSTS`** is an error naming both; TensorFlow silently
//!   returns an empty cluster and no task (so training runs alone on every host). An empty
//!   `SM_HOSTS` is such a case: TensorFlow reads it as no hosts.
//! - **A host listed twice** in `SM_HOSTS` is an error: TensorFlow gives two tasks the same
//!   address, and the second server fails to bind it.
//! - **`SM_HOSTS` must be a JSON list of strings**; TensorFlow's `sorted(json.loads(..))` also
//!   takes an object (its keys), numbers, or mixed types until `sorted` fails. Invalid JSON is
//!   an error naming the variable, line and column.
//! - **Missing variables** are [`Error::MissingVariable`] naming the first one missing
//!   (`SM_HOSTS`, then `SM_CURRENT_HOST`); TensorFlow's is `AssertionError: Not a SageMaker
//!   Environment`, raised by every property — here [`task_type`](ClusterResolver::task_type)
//!   and [`task_id`](ClusterResolver::task_id) return `None` instead, as the trait's accessors
//!   cannot fail.
//! - Hosts are sorted by byte value, which is Python's order for strings.
//! - [`environment`](ClusterResolver::environment) is `""` unless set, where TensorFlow returns
//!   `None`; `num_accelerators` knows of none (TensorFlow asks the running master).

use async_trait::async_trait;
use cluster_spec::__private::quote::{excerpt, quote};
use cluster_spec::ClusterSpec;

use crate::overrides::{Overrides, override_accessors, override_methods};
use crate::tf_config::{TfConfig, json_error};
use crate::{ClusterResolver, Env, Error};

const SM_HOSTS: &str = "SM_HOSTS";
const SM_CURRENT_HOST: &str = "SM_CURRENT_HOST";

/// Resolves a SageMaker training job: every host of `SM_HOSTS` (sorted) is a task of job
/// `worker` on one port (2223 by default), and this process is the task of `SM_CURRENT_HOST`
/// (TensorFlow's `SageMakerClusterResolver`). The variables are read again at every call.
///
/// `with_task_type` and `with_task_id` override `worker` and the current host's position
/// (0 included); SageMaker gives no RPC layer, so there is one only if set with
/// `with_rpc_layer`.
///
/// ```
/// use cluster_resolver::{ClusterResolver, Env, SageMakerClusterResolver};
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let env = Env::from_iter([
///     ("SM_HOSTS", r#"["algo-2", "algo-1", "algo-3"]"#),
///     ("SM_CURRENT_HOST", "algo-2"),
/// ]);
/// let resolver = SageMakerClusterResolver::new(env);
/// let spec = resolver.cluster_spec().await?;
/// assert_eq!(spec.job_tasks("worker")?, [Some("algo-1:2223"), Some("algo-2:2223"), Some("algo-3:2223")]);
/// assert_eq!(resolver.task_type().as_deref(), Some("worker"));
/// assert_eq!(resolver.task_id(), Some(1));
/// assert_eq!(resolver.master(None, None, None).await?, "algo-2:2223");
///
/// let resolver = resolver.with_port(8470).with_rpc_layer("grpc");
/// assert_eq!(resolver.master(None, Some(0), None).await?, "grpc://algo-1:8470");
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SageMakerClusterResolver {
    env: Env,
    port: u16,
    overrides: Overrides,
}

impl SageMakerClusterResolver {
    /// TensorFlow's default port for every host.
    pub const DEFAULT_PORT: u16 = 2223;

    /// A resolver reading `SM_HOSTS` and `SM_CURRENT_HOST` from `env`, with port 2223.
    pub fn new(env: Env) -> Self {
        Self {
            env,
            port: Self::DEFAULT_PORT,
            overrides: Overrides::default(),
        }
    }

    /// Sets the port every host's task listens on.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    override_methods!(task_type, task_id, rpc_layer, environment);

    /// The port every host's task listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The TF_CONFIG document TensorFlow builds from the SageMaker variables, as they are now,
    /// with this resolver's overrides in place of its task and RPC layer.
    ///
    /// ```
    /// use cluster_resolver::{Env, SageMakerClusterResolver};
    ///
    /// let env = Env::from_iter([("SM_HOSTS", r#"["algo-1"]"#), ("SM_CURRENT_HOST", "algo-9")]);
    /// let err = SageMakerClusterResolver::new(env).tf_config().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"environment variable SM_CURRENT_HOST="algo-9" is invalid: it is not one of the hosts of SM_HOSTS ["algo-1"]"#
    /// );
    /// ```
    pub fn tf_config(&self) -> Result<TfConfig, Error> {
        let hosts_json = self.env.require(SM_HOSTS)?;
        let current = self.env.require(SM_CURRENT_HOST)?;
        let mut hosts: Vec<String> = if hosts_json.trim().is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&hosts_json).map_err(|e| json_error(SM_HOSTS, &hosts_json, &e))?
        };
        hosts.sort_unstable();
        if let Some(twice) = hosts.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::InvalidVariable {
                name: SM_HOSTS.to_owned(),
                value: hosts_json.clone(),
                reason: format!(
                    "host {} is listed twice, which would give two tasks one address",
                    quote(&twice[0], 0)
                ),
            });
        }
        let position = hosts
            .binary_search(&current)
            .map_err(|_| Error::InvalidVariable {
                name: SM_CURRENT_HOST.to_owned(),
                value: current.clone(),
                reason: format!(
                    "it is not one of the hosts of {SM_HOSTS} {}",
                    excerpt(&hosts_json, 0)
                ),
            })?;
        let port = self.port;
        let cluster = ClusterSpec::builder()
            .job("worker", hosts.iter().map(|host| format!("{host}:{port}")))
            .build()
            .map_err(|e| Error::InvalidVariable {
                name: SM_HOSTS.to_owned(),
                value: hosts_json.clone(),
                reason: e.to_string(),
            })?;
        // Positions are below the spec's task limit, which the build just checked.
        let index = position as u32;
        let config = TfConfig::new(cluster).with_task("worker", index);
        Ok(self.overrides.apply(config))
    }
}

#[async_trait]
impl ClusterResolver for SageMakerClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error> {
        Ok(self.tf_config()?.cluster)
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, Error> {
        self.tf_config()?.master(task_type, task_id, rpc_layer)
    }

    fn task_type(&self) -> Option<String> {
        self.overrides
            .task_type_or(|| self.tf_config().ok()?.task_type)
    }

    fn task_id(&self) -> Option<u32> {
        self.overrides.task_id_or(|| self.tf_config().ok()?.task_id)
    }

    // SageMaker gives no RPC layer or environment: only the overrides set them.
    override_accessors!(rpc_layer, environment);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(hosts: &str, current: &str) -> SageMakerClusterResolver {
        SageMakerClusterResolver::new(Env::from_iter([
            (SM_HOSTS, hosts),
            (SM_CURRENT_HOST, current),
        ]))
    }

    #[tokio::test]
    async fn one_host_has_no_master() {
        let r = resolver(r#"["algo-1"]"#, "algo-1");
        assert_eq!(r.master(None, None, None).await.unwrap(), "");
        assert_eq!(r.task_id(), Some(0));
    }

    #[tokio::test]
    async fn missing_variables_are_named() {
        let r = SageMakerClusterResolver::new(Env::from_iter([(SM_CURRENT_HOST, "a")]));
        assert_eq!(
            r.cluster_spec().await.unwrap_err().to_string(),
            "environment variable SM_HOSTS is not set"
        );
        assert_eq!(r.task_type(), None);
        let r = SageMakerClusterResolver::new(Env::from_iter([(SM_HOSTS, "[]")]));
        assert_eq!(
            r.cluster_spec().await.unwrap_err().to_string(),
            "environment variable SM_CURRENT_HOST is not set"
        );
    }

    #[tokio::test]
    async fn bad_host_lists_are_errors() {
        for (hosts, says) in [
            (r#"["a", "b", "a"]"#, r#"host "a" is listed twice"#),
            ("", "not one of the hosts of SM_HOSTS"),
            (r#"{"a": 1}"#, "invalid type: map, expected a sequence"),
            (
                r#"["a", 1]"#,
                "invalid type: integer `1`, expected a string",
            ),
            (
                "[\"a\",",
                "environment variable SM_HOSTS is invalid at line 1, column 5",
            ),
            (
                r#"["a", "b c"]"#,
                r#"invalid address "b c:2223" for task 1 of job 'worker'"#,
            ),
        ] {
            let message = resolver(hosts, "a")
                .cluster_spec()
                .await
                .unwrap_err()
                .to_string();
            assert!(message.contains(says), "{hosts}: {message}");
        }
    }

    #[tokio::test]
    async fn overrides() {
        let r = resolver(r#"["b", "a"]"#, "b")
            .with_task_type("chief")
            .with_task_id(0)
            .with_environment("google");
        assert_eq!(r.task_type().as_deref(), Some("chief"));
        assert_eq!(r.task_id(), Some(0));
        assert_eq!(r.environment(), "google");
        assert_eq!(
            r.master(Some("worker"), None, None).await.unwrap(),
            "a:2223"
        );
        assert_eq!(r.port(), 2223);
    }
}
