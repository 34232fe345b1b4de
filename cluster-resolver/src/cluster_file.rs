//! A cluster file, as `tfcluster … --from file --file PATH` reads it: a `TF_CONFIG` document
//! (an object with a `"cluster"` key, and its `task` and `rpc_layer`), or a bare cluster spec
//! (`{"worker": ["w0:2222"]}`).

use cluster_spec::ClusterSpec;

use crate::TfConfig;
pub use crate::error::cluster_file::Error;

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
    let is_tf_config = serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|document| document.get("cluster").is_some());
    if is_tf_config {
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
