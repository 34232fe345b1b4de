//! [`TfConfig`]: the TF_CONFIG document, read strictly and written back.

use cluster_spec::ClusterSpec;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};

use super::fields;
use crate::{Env, Error};

/// The environment variable TensorFlow reads its cluster from.
pub(crate) const TF_CONFIG: &str = "TF_CONFIG";

/// A TF_CONFIG document: the cluster, this process's task, and the optional `rpc_layer`,
/// `session_master` and `environment` keys.
///
/// [`from_json`](Self::from_json) reads the keys TensorFlow reads and checks each one (a
/// `task.index` that is not a non-negative integer, an `rpc_layer` that is not a string and an
/// invalid cluster are errors naming the key, the value and the line and column); other keys
/// are ignored, as TensorFlow ignores them. [`to_json`](Self::to_json) writes a document that
/// reads back equal.
///
/// ```
/// use cluster_resolver::TfConfig;
/// use cluster_spec::ClusterSpec;
///
/// let config = TfConfig::from_json(r#"{
///     "cluster": {"worker": ["w0:2222", "w1:2222"], "ps": {"3": "ps3:2222"}},
///     "task": {"type": "worker", "index": "1"},
///     "rpc_layer": "grpc"
/// }"#)?;
/// assert_eq!(config.task_type.as_deref(), Some("worker"));
/// assert_eq!(config.task_id, Some(1)); // "1" is read as TensorFlow's int("1")
/// assert_eq!(config.cluster.task_address("ps", 3)?, "ps3:2222");
///
/// let written = config.to_json();
/// assert_eq!(TfConfig::from_json(&written)?, config);
///
/// let err = TfConfig::from_json(r#"{"task": {"type": "worker", "index": -1}}"#).unwrap_err();
/// assert!(err.to_string().starts_with(
///     "environment variable TF_CONFIG is invalid at line 1, column 39: invalid value: \
///      integer `-1`, expected `task.index` to be"
/// ), "{err}");
/// # Ok::<(), cluster_resolver::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TfConfig {
    /// The `cluster` object; empty when the key is absent or `null`.
    pub cluster: ClusterSpec,
    /// `task.type`: this process's job.
    pub task_type: Option<String>,
    /// `task.index`: this process's task index.
    pub task_id: Option<u32>,
    /// `rpc_layer`, e.g. `"grpc"`.
    pub rpc_layer: Option<String>,
    /// `session_master`: when set, [`master`](Self::master) returns it verbatim.
    pub session_master: Option<String>,
    /// `environment` (e.g. `"cloud"`). Kept for callers that want it; TensorFlow's resolver
    /// does not read it, and neither does
    /// [`TfConfigClusterResolver::environment`](crate::ClusterResolver::environment).
    pub environment: Option<String>,
}

impl TfConfig {
    /// A document with `cluster` and no other keys.
    pub fn new(cluster: ClusterSpec) -> Self {
        Self {
            cluster,
            ..Self::default()
        }
    }

    /// Sets `task.type` and `task.index`.
    pub fn with_task(mut self, task_type: impl Into<String>, task_id: u32) -> Self {
        self.task_type = Some(task_type.into());
        self.task_id = Some(task_id);
        self
    }

    /// Sets `rpc_layer`.
    pub fn with_rpc_layer(mut self, rpc_layer: impl Into<String>) -> Self {
        self.rpc_layer = Some(rpc_layer.into());
        self
    }

    /// Sets `session_master`.
    pub fn with_session_master(mut self, session_master: impl Into<String>) -> Self {
        self.session_master = Some(session_master.into());
        self
    }

    /// Sets `environment`.
    pub fn with_environment(mut self, environment: impl Into<String>) -> Self {
        self.environment = Some(environment.into());
        self
    }

    /// Reads a TF_CONFIG document. Empty (or all-whitespace) text is the empty document, as an
    /// unset variable is.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        Ok(parse::<ClusterSpec>(TF_CONFIG, json)?
            .map(Wire::into_config)
            .unwrap_or_default())
    }

    /// Reads `TF_CONFIG` from `env`; unset or empty is the empty document.
    pub fn from_env(env: &Env) -> Result<Self, Error> {
        env.get(TF_CONFIG)?
            .map_or_else(|| Ok(Self::default()), |json| Self::from_json(&json))
    }

    /// The document as compact JSON: `cluster` in TensorFlow's `as_dict` shape (jobs in
    /// definition order), then `task`, `rpc_layer`, `session_master` and `environment` when
    /// set.
    pub fn to_json(&self) -> String {
        render(
            &self.cluster,
            self.task_type.as_deref(),
            self.task_id,
            self.rpc_layer.as_deref(),
            self.session_master.as_deref(),
            self.environment.as_deref(),
        )
    }
}

/// Renders the TF_CONFIG of task `task_id` of job `task_type` in `spec`: what a launcher sets
/// for each process. [`TfConfigClusterResolver`](crate::TfConfigClusterResolver) reads it back
/// to the same spec and task.
///
/// The task must be in the spec ([`cluster_spec::Error::NoSuchJob`] or
/// [`NoSuchTask`](cluster_spec::Error::NoSuchTask) otherwise). For a document naming a task
/// outside its cluster (an evaluator kept out of the training cluster), build a [`TfConfig`].
///
/// ```
/// use cluster_resolver::tf_config_for;
/// use cluster_spec::ClusterSpec;
///
/// let spec = ClusterSpec::builder()
///     .job("chief", ["c0:2222"])
///     .job("worker", ["w0:2222", "w1:2222"])
///     .build()?;
/// assert_eq!(
///     tf_config_for(&spec, "worker", 1, Some("grpc"))?,
///     r#"{"cluster":{"chief":["c0:2222"],"worker":["w0:2222","w1:2222"]},"task":{"type":"worker","index":1},"rpc_layer":"grpc"}"#
/// );
/// assert_eq!(
///     tf_config_for(&spec, "worker", 2, None).unwrap_err().to_string(),
///     "No task with index 2 in job 'worker'"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tf_config_for(
    spec: &ClusterSpec,
    task_type: &str,
    task_id: u32,
    rpc_layer: Option<&str>,
) -> Result<String, Error> {
    spec.task_address(task_type, task_id)?;
    Ok(render(
        spec,
        Some(task_type),
        Some(task_id),
        rpc_layer,
        None,
        None,
    ))
}

fn render(
    cluster: &ClusterSpec,
    task_type: Option<&str>,
    index: Option<u32>,
    rpc_layer: Option<&str>,
    session_master: Option<&str>,
    environment: Option<&str>,
) -> String {
    let task = (task_type.is_some() || index.is_some()).then_some(TaskOut { task_type, index });
    let out = WireOut {
        cluster,
        task,
        rpc_layer,
        session_master,
        environment,
    };
    // Strings, integers and a ClusterSpec (whose own Serialize cannot fail) always serialize.
    serde_json::to_string(&out).unwrap_or_default()
}

#[derive(Serialize)]
struct WireOut<'a> {
    cluster: &'a ClusterSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<TaskOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rpc_layer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_master: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment: Option<&'a str>,
}

#[derive(Serialize)]
struct TaskOut<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    task_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
}

/// The document as serde reads it. `C` is [`ClusterSpec`], or [`IgnoredAny`] when only the
/// task or RPC layer is wanted and building the spec would be wasted work.
#[derive(Deserialize)]
#[serde(expecting = "TF_CONFIG to be a JSON object such as \
                     {\"cluster\": {...}, \"task\": {\"type\": ..., \"index\": ...}}")]
pub(crate) struct Wire<C> {
    cluster: Option<C>,
    #[serde(default)]
    task: Option<WireTask>,
    #[serde(default, deserialize_with = "fields::rpc_layer")]
    rpc_layer: Option<String>,
    #[serde(default, deserialize_with = "fields::session_master")]
    session_master: Option<String>,
    #[serde(default, deserialize_with = "fields::lenient_string")]
    environment: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "`task` to be an object such as {\"type\": \"worker\", \"index\": 0}")]
struct WireTask {
    #[serde(rename = "type", default, deserialize_with = "fields::task_type")]
    task_type: Option<String>,
    #[serde(default, deserialize_with = "fields::task_index")]
    index: Option<u32>,
}

impl<C> Wire<C> {
    pub(crate) fn task_type(&self) -> Option<&str> {
        self.task.as_ref()?.task_type.as_deref()
    }

    pub(crate) fn task_id(&self) -> Option<u32> {
        self.task.as_ref()?.index
    }

    pub(crate) fn rpc_layer(&self) -> Option<&str> {
        self.rpc_layer.as_deref()
    }
}

impl Wire<ClusterSpec> {
    fn into_config(self) -> TfConfig {
        let (task_type, task_id) = self
            .task
            .map_or((None, None), |task| (task.task_type, task.index));
        TfConfig {
            cluster: self.cluster.unwrap_or_default(),
            task_type,
            task_id,
            rpc_layer: self.rpc_layer,
            session_master: self.session_master,
            environment: self.environment,
        }
    }
}

/// The document without building its cluster (still checking that it is JSON).
pub(crate) type WireSkippingCluster = Wire<IgnoredAny>;

/// Parses the JSON document held by variable `name`; `None` when it is blank.
pub(crate) fn parse<C: DeserializeOwned>(name: &str, text: &str) -> Result<Option<Wire<C>>, Error> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| json_error(name, text, &e))
}

/// The error for JSON in variable `name` that serde_json rejected: its message, line, column
/// and byte position, so the message can quote the text around the problem.
pub(crate) fn json_error(name: &str, text: &str, e: &serde_json::Error) -> Error {
    let (line, column) = (e.line(), e.column());
    let full = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    // serde_json quotes the offending string whole (`invalid type: string "…"`).
    let message =
        cluster_spec::__private::quote::excerpt(full.strip_suffix(&suffix).unwrap_or(&full), 0);
    Error::InvalidJsonVariable {
        name: name.to_owned(),
        value: text.to_owned(),
        line,
        column,
        pos: byte_position(text, line, column),
        message,
    }
}

/// The byte offset of 1-based `line` and `column` (serde_json counts columns in bytes; 0
/// means "before the first byte of the line").
fn byte_position(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut pos = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        TfConfig::from_json(json).unwrap_err().to_string()
    }

    #[test]
    fn blank_is_the_empty_document() {
        for text in ["", "  ", "\n\t"] {
            assert_eq!(TfConfig::from_json(text).unwrap(), TfConfig::default());
        }
        assert_eq!(TfConfig::from_json("{}").unwrap(), TfConfig::default());
    }

    #[test]
    fn nulls_are_absent_keys() {
        let config = TfConfig::from_json(
            r#"{"cluster": null, "task": null, "rpc_layer": null, "session_master": null}"#,
        )
        .unwrap();
        assert_eq!(config, TfConfig::default());
        let config = TfConfig::from_json(r#"{"task": {"type": null, "index": null}}"#).unwrap();
        assert_eq!(config, TfConfig::default());
    }

    #[test]
    fn task_type_may_be_an_integer_as_in_tensorflow() {
        let config = TfConfig::from_json(r#"{"task": {"type": 123456, "index": 0}}"#).unwrap();
        assert_eq!(config.task_type.as_deref(), Some("123456"));
    }

    #[test]
    fn task_index_accepts_integers_and_digit_strings() {
        for (index, want) in [
            ("0", 0),
            ("7", 7),
            ("\"3\"", 3),
            ("\"007\"", 7),
            ("2147483647", 2147483647),
            ("\"2147483647\"", 2147483647),
        ] {
            let config =
                TfConfig::from_json(&format!(r#"{{"task": {{"index": {index}}}}}"#)).unwrap();
            assert_eq!(config.task_id, Some(want), "{index}");
        }
    }

    #[test]
    fn task_index_rejects_everything_else_naming_the_value() {
        for (index, shown) in [
            ("-1", "integer `-1`"),
            ("1.0", "floating point `1.0`"),
            ("true", "boolean `true`"),
            ("\"\"", "string \"\""),
            ("\" 1\"", "string \" 1\""),
            ("\"+1\"", "string \"+1\""),
            ("\"-1\"", "string \"-1\""),
            ("\"1_0\"", "string \"1_0\""),
            ("\"x\"", "string \"x\""),
            ("2147483648", "integer `2147483648`"),
            ("\"2147483648\"", "string \"2147483648\""),
            (
                "\"99999999999999999999\"",
                "string \"99999999999999999999\"",
            ),
            ("[1]", "sequence"),
        ] {
            let message = err(&format!(r#"{{"task": {{"index": {index}}}}}"#));
            assert!(message.contains(shown), "{index}: {message}");
            assert!(message.contains("`task.index`"), "{index}: {message}");
        }
    }

    #[test]
    fn wrongly_typed_keys_are_named() {
        assert!(err(r#"{"rpc_layer": 5}"#).contains("`rpc_layer` to be a string"));
        assert!(err(r#"{"session_master": []}"#).contains("`session_master` to be a string"));
        assert!(err(r#"{"task": {"type": true}}"#).contains("`task.type` to be a string"));
        assert!(err(r#"{"task": "worker"}"#).contains("`task` to be an object"));
        assert!(err("[]").contains("TF_CONFIG to be a JSON object"));
    }

    #[test]
    fn environment_is_lenient_because_tensorflow_ignores_it() {
        let config = TfConfig::from_json(r#"{"environment": {"x": 1}}"#).unwrap();
        assert_eq!(config.environment, None);
        let config = TfConfig::from_json(r#"{"environment": "cloud"}"#).unwrap();
        assert_eq!(config.environment.as_deref(), Some("cloud"));
    }

    #[test]
    fn invalid_cluster_errors_name_job_task_and_position() {
        let message = err("{\"cluster\": {\n \"worker\": [\"localhost\"]}}");
        assert!(message.starts_with("environment variable TF_CONFIG is invalid at line 2"));
        assert!(
            message.contains("invalid address \"localhost\" for task 0 of job 'worker'"),
            "{message}"
        );
    }

    #[test]
    fn syntax_errors_quote_the_text_at_the_position() {
        let message = err(r#"{"cluster": {"worker": ["a:1",]}}"#);
        assert_eq!(
            message,
            "environment variable TF_CONFIG is invalid at line 1, column 31: \
             trailing comma: \"{\\\"cluster\\\": {\\\"worker\\\": [\\\"a:1\\\",]}}\""
        );
    }

    #[test]
    fn unknown_keys_are_ignored_duplicate_keys_are_not() {
        assert!(TfConfig::from_json(r#"{"job": {"x": 1}, "cluster": {}}"#).is_ok());
        assert!(err(r#"{"rpc_layer": "a", "rpc_layer": "b"}"#).contains("duplicate field"));
    }

    #[test]
    fn byte_positions_follow_lines_and_char_boundaries() {
        assert_eq!(byte_position("ab\ncd", 2, 2), 4);
        assert_eq!(byte_position("ab\ncd", 2, 0), 3);
        assert_eq!(byte_position("é", 1, 2), 0);
        assert_eq!(byte_position("ab", 9, 9), 2);
    }

    #[test]
    fn written_documents_read_back() {
        let spec = ClusterSpec::builder()
            .job("worker", ["a:1", "b:1"])
            .sparse_job("ps", [(4, "c:1")])
            .build()
            .unwrap();
        let config = TfConfig::new(spec)
            .with_task("ps", 4)
            .with_rpc_layer("grpc")
            .with_session_master("grpc://m:1")
            .with_environment("cloud");
        assert_eq!(TfConfig::from_json(&config.to_json()).unwrap(), config);
        assert_eq!(
            TfConfig::default().to_json(),
            r#"{"cluster":{}}"#,
            "the empty document"
        );
    }
}
