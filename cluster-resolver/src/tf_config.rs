//! [`TfConfigClusterResolver`]: the cluster from the `TF_CONFIG` environment variable, as
//! TensorFlow's `TFConfigClusterResolver`; [`TfConfig`], the document itself; and
//! [`tf_config_for`], which writes one for a task of a spec.
//!
//! The variable is read at every call, as TensorFlow's resolver reads it: with
//! [`Env::process`], a `TF_CONFIG` a launcher rewrites is seen by the next call. Whoever keeps a
//! spec (a strategy, a connected context) keeps that reading, not the variable
//! (tensorflow/tensorflow#31154): resolve again to follow a change.
//!
//! # Differences from TensorFlow
//!
//! - **An empty `TF_CONFIG`** (or only whitespace) is read as an unset one: an empty cluster
//!   and no task. TensorFlow fails with `JSONDecodeError: Expecting value: line 1 column 1`;
//!   an empty value is how many launchers and shells "unset" a variable.
//! - **Invalid values are errors, at every read**, naming the key, the value, the line and
//!   the column: a `task.index` that is not a number from 0 to 2^31−1 or a string of ASCII
//!   digits (TensorFlow's `int()` also takes `1.9` as 1, `true`, `" 1"`, `"+1"`, `"1_0"` and
//!   negative numbers), a `task.type` that is not a string or an integer (TensorFlow's `str()`
//!   turns `true` into `"True"` and `null` into `"None"`), an `rpc_layer` or `session_master`
//!   that is not a string, a `task` that is not an object (TensorFlow then tests `'type' in
//!   task` as a substring test on a string), a top level that is not an object, a key given
//!   twice (Python keeps the last), and an invalid cluster (see `cluster-spec`'s differences:
//!   job names, addresses, indices are validated).
//! - **`null` is an absent key** everywhere; TensorFlow agrees for `rpc_layer` and
//!   `session_master`, but reads `"task": {"type": null}` as job `"None"` and fails on a
//!   `null` index or cluster.
//! - [`task_type`](ClusterResolver::task_type), [`task_id`](ClusterResolver::task_id) and
//!   [`rpc_layer`](ClusterResolver::rpc_layer) cannot fail in the trait; when `TF_CONFIG` is
//!   invalid they return `None` where TensorFlow raises. The error is reported by
//!   [`cluster_spec`](ClusterResolver::cluster_spec), [`master`](ClusterResolver::master) and
//!   [`TfConfigClusterResolver::tf_config`].
//! - **`master()` of a cluster of one job with no tasks** falls through to the task lookup;
//!   TensorFlow fails with `ValueError: max() arg is an empty sequence`. Without a task type
//!   or index it is [`Error::TfConfigNoTask`]; TensorFlow's is `No such job in cluster: None`
//!   (its docstring promises a `RuntimeError`).
//! - **`num_accelerators`** knows of no accelerators: TensorFlow's asks the running master
//!   for its devices, which needs a connection (the `remote-connect` crate).
//! - [`environment`](ClusterResolver::environment) is the override given to the resolver, or
//!   `""` where TensorFlow returns `None`. As in TensorFlow, TF_CONFIG's own `environment` key
//!   is not used for it (it is in [`TfConfig::environment`]).

mod document;
mod fields;
mod master;

use async_trait::async_trait;
use cluster_spec::ClusterSpec;

pub use document::{TfConfig, tf_config_for};
pub(crate) use document::{WireSkippingCluster, json_error, parse};

use crate::overrides::{Overrides, override_accessors, override_methods};
use crate::{ClusterResolver, Env, Error};
use document::TF_CONFIG;

/// Resolves the cluster from the `TF_CONFIG` environment variable, read again at every call
/// (TensorFlow's `TFConfigClusterResolver`).
///
/// `TF_CONFIG` holds a JSON document: `cluster` (job → list of addresses, or object of index →
/// address), `task` (`type` and `index`), and optionally `rpc_layer` and `session_master`.
/// Unset or empty, it is an empty cluster with no task. The task type, task index and RPC layer
/// may be overridden, as with TensorFlow's constructor arguments: `with_task_type`,
/// `with_task_id` and `with_rpc_layer` win over `task.type`, `task.index` (0 included) and
/// `rpc_layer`, and their `set_*` with `None` read the document's again. `with_environment` is
/// TensorFlow's `environment` argument.
///
/// ```
/// use cluster_resolver::{ClusterResolver, Env, TfConfigClusterResolver};
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let env = Env::from_iter([(
///     "TF_CONFIG",
///     r#"{"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]},
///         "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}"#,
/// )]);
/// let resolver = TfConfigClusterResolver::new(env);
/// assert_eq!(resolver.cluster_spec().await?.jobs(), ["chief", "worker"]);
/// assert_eq!(resolver.task_type().as_deref(), Some("worker"));
/// assert_eq!(resolver.task_id(), Some(1));
/// assert_eq!(resolver.master(None, None, None).await?, "grpc://w1:2222");
/// assert_eq!(resolver.master(Some("chief"), Some(0), None).await?, "grpc://c0:2222");
///
/// // Overrides, as TensorFlow's constructor arguments; an id of 0 is an override too.
/// let chief = TfConfigClusterResolver::new(resolver.env().clone())
///     .with_task_type("chief")
///     .with_task_id(0);
/// assert_eq!(chief.master(None, None, None).await?, "grpc://c0:2222");
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct TfConfigClusterResolver {
    env: Env,
    overrides: Overrides,
}

impl TfConfigClusterResolver {
    /// A resolver reading `TF_CONFIG` from `env` ([`Env::process`] for the real environment).
    pub fn new(env: Env) -> Self {
        Self {
            env,
            overrides: Overrides::default(),
        }
    }

    override_methods!(task_type, task_id, rpc_layer, environment);

    /// The environment this resolver reads.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// `TF_CONFIG` as it is now, with this resolver's task type, task index and RPC layer
    /// overrides in place of the document's: the fallible form of the trait's accessors.
    ///
    /// ```
    /// use cluster_resolver::{Env, TfConfigClusterResolver};
    ///
    /// let env = Env::from_iter([("TF_CONFIG", r#"{"task": {"type": "ps", "index": "x"}}"#)]);
    /// let err = TfConfigClusterResolver::new(env).tf_config().unwrap_err();
    /// assert!(err.to_string().contains(r#"invalid value: string "x", expected `task.index`"#));
    /// ```
    pub fn tf_config(&self) -> Result<TfConfig, Error> {
        Ok(self.overrides.apply(TfConfig::from_env(&self.env)?))
    }

    /// The document without building its cluster: enough for the task and RPC layer.
    fn light(&self) -> Option<WireSkippingCluster> {
        // An unreadable TF_CONFIG resolves to nothing; tf_config() reports why.
        let text = self.env.get(TF_CONFIG).ok()??;
        parse(TF_CONFIG, &text).ok().flatten()
    }
}

#[async_trait]
impl ClusterResolver for TfConfigClusterResolver {
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error> {
        // The whole document is read, so an invalid task or RPC layer is reported here too.
        Ok(TfConfig::from_env(&self.env)?.cluster)
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
            .task_type_or(|| self.light()?.task_type().map(str::to_owned))
    }

    fn task_id(&self) -> Option<u32> {
        self.overrides.task_id_or(|| self.light()?.task_id())
    }

    fn rpc_layer(&self) -> Option<String> {
        self.overrides
            .rpc_layer_or(|| self.light()?.rpc_layer().map(str::to_owned))
    }

    // TF_CONFIG's own `environment` key is not it (as TensorFlow): only the override is.
    override_accessors!(environment);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(tf_config: &str) -> TfConfigClusterResolver {
        TfConfigClusterResolver::new(Env::from_iter([(TF_CONFIG, tf_config)]))
    }

    #[tokio::test]
    async fn unset_and_empty_are_an_empty_cluster() {
        for r in [
            TfConfigClusterResolver::new(Env::from_iter::<[(&str, &str); 0]>([])),
            resolver(""),
        ] {
            assert!(r.cluster_spec().await.unwrap().is_empty());
            assert_eq!(r.task_type(), None);
            assert_eq!(r.task_id(), None);
            assert_eq!(r.rpc_layer(), None);
            assert_eq!(r.master(None, None, None).await.unwrap(), "");
            assert_eq!(r.environment(), "");
        }
    }

    #[tokio::test]
    async fn overrides_win_and_zero_counts() {
        let r = resolver(r#"{"cluster": {"w": ["a:1", "b:1"]}, "task": {"type": "w", "index": 1}, "rpc_layer": "grpc"}"#)
            .with_task_id(0)
            .with_rpc_layer("")
            .with_environment("google");
        assert_eq!(r.task_id(), Some(0));
        assert_eq!(r.rpc_layer().as_deref(), Some(""));
        assert_eq!(r.master(None, None, None).await.unwrap(), "a:1");
        assert_eq!(r.environment(), "google");
    }

    #[tokio::test]
    async fn invalid_documents_fail_the_fallible_calls_only() {
        let r = resolver(r#"{"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": -2}}"#);
        assert!(r.cluster_spec().await.is_err());
        assert!(r.master(None, None, None).await.is_err());
        // The trait's accessors cannot fail: an invalid document gives no task at all.
        assert_eq!(r.task_type(), None);
        assert_eq!(r.task_id(), None);
    }

    #[tokio::test]
    async fn the_variable_is_read_at_every_call() {
        let spec = ClusterSpec::builder()
            .job("w", ["a:1", "b:1"])
            .build()
            .unwrap();
        let r = resolver(&tf_config_for(&spec, "w", 1, None).unwrap());
        assert_eq!(r.task_id(), Some(1));
        // A light read does not build the cluster, so an invalid cluster does not hide the task.
        let r = resolver(r#"{"cluster": {"w": ["nope"]}, "task": {"type": "w", "index": 0}}"#);
        assert_eq!(r.task_id(), Some(0));
        assert!(r.cluster_spec().await.is_err());
    }
}
