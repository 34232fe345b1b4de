//! Running TensorFlow 2.21's Python as a test oracle.
//!
//! Each test runs python once with a batch of cases: the script reads JSON on stdin and writes
//! one JSON document as its last line of stdout.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Runs `script` under TensorFlow's python with `input` as JSON on stdin, and returns the
/// JSON of the last line it prints.
pub(crate) fn run(script: &str, input: &Value) -> Value {
    tf_oracle::run_json(script, input)
}

/// TensorFlow's answers in `result`, exactly one per case, each read as a `T`.
pub(crate) fn answers<T: DeserializeOwned>(result: &Value, cases: usize) -> Vec<T> {
    tf_oracle::one_per_case(result, cases)
        .iter()
        .map(|answer| {
            serde_json::from_value(answer.clone())
                .unwrap_or_else(|e| panic!("TensorFlow's answer {answer}: {e}"))
        })
        .collect()
}

/// Python preamble: imports TensorFlow quietly, checks its version, reads the cases.
pub(crate) const PRELUDE: &str = r#"
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
if not tf.__version__.startswith("2.21."):
    sys.exit("expected TensorFlow 2.21, found " + tf.__version__)
cases = json.load(sys.stdin)
"#;
