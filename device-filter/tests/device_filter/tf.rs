//! Running TensorFlow 2.21's Python as a test oracle.
//!
//! Python is `$TFCLUSTER_PYTHON`, else `<workspace>/target/tf-venv/bin/python`. Each test runs
//! it once with a batch of cases: the script reads JSON on stdin and writes one JSON document
//! as its last line of stdout. When python or TensorFlow cannot run, the test fails with a
//! message that says what to do; it never skips. A run that takes longer than five minutes is
//! killed and fails the test.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one python run may take (TensorFlow's import alone takes seconds on a loaded
/// machine).
const TIMEOUT: Duration = Duration::from_secs(300);

/// The python to run, and where it came from (for messages).
fn python() -> (PathBuf, &'static str) {
    match std::env::var_os("TFCLUSTER_PYTHON") {
        Some(path) if !path.is_empty() => (PathBuf::from(path), "$TFCLUSTER_PYTHON"),
        _ => {
            let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .map(PathBuf::from)
                .unwrap_or_default();
            (
                workspace.join("target/tf-venv/bin/python"),
                "the default <workspace>/target/tf-venv/bin/python",
            )
        }
    }
}

/// Runs `script` under TensorFlow's python with `input` as JSON on stdin and returns the JSON
/// of the last line it prints. Panics with a clear message when it cannot.
pub(crate) fn run(script: &str, input: &serde_json::Value) -> serde_json::Value {
    let (python, origin) = python();
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(script)
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .env("CUDA_VISIBLE_DEVICES", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run TensorFlow's python {} ({origin}): {e}. These tests need TensorFlow \
                 2.21: create the venv (python3 -m venv target/tf-venv && target/tf-venv/bin/pip \
                 install tensorflow-cpu==2.21.0) or set TFCLUSTER_PYTHON to a python that has it.",
                python.display()
            )
        });
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("write the cases to python's stdin");
    }
    // Read both pipes on their own threads so that a chatty python cannot block, and give up
    // after TIMEOUT rather than hang the test run.
    let pipe = |reader: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut reader) = reader {
                let _ = reader.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = pipe(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for python") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "TensorFlow's python {} ({origin}) did not finish within {TIMEOUT:?}",
                python.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "TensorFlow's python {} ({origin}) failed ({}). Does it have TensorFlow 2.21 \
         (pip install tensorflow-cpu==2.21.0)?\nstderr:\n{stderr}\nstdout:\n{stdout}",
        python.display(),
        output.status
    );
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!("python printed no JSON result ({e}).\nstdout:\n{stdout}\nstderr:\n{stderr}")
    })
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
