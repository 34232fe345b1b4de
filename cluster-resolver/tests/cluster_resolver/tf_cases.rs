//! One run of TensorFlow 2.21's Python over a batch of cases (TensorFlow's import takes
//! seconds, so each differential test starts python once). The cases go in as JSON on stdin;
//! the script prints one JSON document as its last line. `tf_oracle` fails the test, never
//! skips it, when TensorFlow is missing.
//!
//! In the script, `attempt(f)` records `{"ok": f()}` or `{"err": "<exception class>", "msg":
//! "<message>"}`, and `spec_json(spec)` is `spec.as_dict()` with sparse keys as strings.

use serde_json::Value;

const PRELUDE: &str = r#"
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
if not tf.__version__.startswith("2.21."):
    sys.exit("expected TensorFlow 2.21, found " + tf.__version__)
cases = json.load(sys.stdin)

def attempt(f):
    try:
        return {"ok": f()}
    except Exception as e:
        # str(KeyError("x")) is "'x'"; the message itself is its argument.
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        return {"err": type(e).__name__, "msg": str(msg)}

def spec_json(spec):
    return {job: tasks if isinstance(tasks, list) else {str(k): v for k, v in tasks.items()}
            for job, tasks in spec.as_dict().items()}
"#;

/// Runs `script` (after the prelude above) with `cases` on stdin; returns its last JSON line.
pub(crate) fn run(script: &str, cases: &Value) -> Value {
    tf_oracle::run_json(&format!("{PRELUDE}\n{script}"), cases)
}

/// TensorFlow's answer to one call: a value, or an exception.
#[derive(Debug)]
pub(crate) enum Answer<'a> {
    Ok(&'a Value),
    Err { class: &'a str, msg: &'a str },
}

impl Answer<'_> {
    /// The value, if TensorFlow gave one.
    pub(crate) fn ok(&self) -> Option<&Value> {
        match self {
            Answer::Ok(v) => Some(v),
            Answer::Err { .. } => None,
        }
    }
}

/// Reads an `attempt(...)` record.
pub(crate) fn answer(v: &Value) -> Answer<'_> {
    match (v.get("ok"), v.get("err"), v.get("msg")) {
        (Some(ok), _, _) => Answer::Ok(ok),
        (None, Some(Value::String(class)), Some(Value::String(msg))) => Answer::Err { class, msg },
        _ => panic!("not an attempt() record: {v}"),
    }
}

pub(crate) use tf_oracle::Tally;
