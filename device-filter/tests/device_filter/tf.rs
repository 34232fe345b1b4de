//! Running TensorFlow 2.21's Python as a test oracle.
//!
//! Each test runs python once with a batch of cases: the script reads JSON on stdin and writes
//! one JSON document as its last line of stdout.

use serde_json::Value;

/// Runs `script` under TensorFlow's python with `input` as JSON on stdin, and returns the
/// JSON of the last line it prints.
pub(crate) fn run(script: &str, input: &Value) -> Value {
    tf_oracle::run_json(script, input)
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
