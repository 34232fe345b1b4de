//! A cluster file, as `tfcluster … --from file --file PATH` reads it: a `TF_CONFIG` document
//! (an object with a `"cluster"` key, and its `task` and `rpc_layer`), or a bare cluster spec
//! (`{"worker": ["w0:2222"]}`).

use cluster_spec::ClusterSpec;

pub use crate::error::cluster_file::Error;
use crate::{ClusterResolver, Env, SimpleClusterResolver, TfConfig, TfConfigClusterResolver};

/// Reads the text of a cluster file: a `TF_CONFIG` document when it is a JSON object with a
/// `"cluster"` key, else a bare cluster spec (whose parser then reports any syntax error with
/// its position). So a cluster with a job named `cluster` is written as a `TF_CONFIG` document
/// (`{"cluster": {"cluster": [...]}}`), as the shape cannot tell.
///
/// ```
/// use cluster_resolver::cluster_file;
///
/// let doc = cluster_file::parse(r#"{"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 0}}"#)?;
/// assert_eq!(doc.task_id, Some(0));
/// let bare = cluster_file::parse(r#"{"worker": ["w0:1", "w1:1"]}"#)?;
/// assert_eq!(bare.cluster.num_tasks("worker")?, 2);
/// assert!(cluster_file::parse(r#"{"worker": ["w0"]}"#).is_err());
/// let err = cluster_file::parse(r#"{"cluster": {}, "task": {"index": -1}}"#).unwrap_err();
/// assert!(err.to_string().starts_with("invalid TF_CONFIG document at line 1, column "));
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
pub fn parse(text: &str) -> Result<TfConfig, crate::Error> {
    if is_tf_config(text) {
        // Read as the TF_CONFIG variable is, but the error names a document, not a variable.
        return TfConfig::from_json(text).map_err(|e| match e {
            crate::Error::InvalidJsonVariable {
                value,
                line,
                column,
                pos,
                message,
                ..
            } => Error::InvalidDocument {
                text: value,
                line,
                column,
                pos,
                message,
            }
            .into(),
            other => other,
        });
    }
    Ok(TfConfig::new(ClusterSpec::from_json(text)?))
}

/// A resolver answering for the text of a cluster file as TensorFlow's would: a `TF_CONFIG`
/// document as a [`TfConfigClusterResolver`] reading it (its task and RPC layer included), a
/// bare spec as a [`SimpleClusterResolver`] (no task; master `""`). The text is checked
/// first, with [`parse`]'s errors.
///
/// ```
/// use cluster_resolver::{ClusterResolver, cluster_file};
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let doc = r#"{"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 0}}"#;
/// let doc = cluster_file::resolver(doc)?;
/// assert_eq!((doc.task_type().as_deref(), doc.task_id()), (Some("worker"), Some(0)));
/// let bare = cluster_file::resolver(r#"{"worker": ["w0:1"]}"#)?;
/// assert_eq!((bare.task_type(), bare.master(None, None, None).await?), (None, String::new()));
/// assert_eq!(bare.cluster_spec().await?.num_tasks("worker")?, 1);
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run()).unwrap();
/// ```
pub fn resolver(text: &str) -> Result<Box<dyn ClusterResolver>, crate::Error> {
    let config = parse(text)?;
    if is_tf_config(text) {
        let env = Env::from_iter([("TF_CONFIG", text)]);
        return Ok(Box::new(TfConfigClusterResolver::new(env)));
    }
    Ok(Box::new(SimpleClusterResolver::new(config.cluster)))
}

/// Whether `text` is a `TF_CONFIG` document: a JSON object with a `"cluster"` key.
fn is_tf_config(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|document| document.get("cluster").is_some())
}
