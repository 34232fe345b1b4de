//! # tf-oracle — real TensorFlow as a test oracle
//!
//! Dev-dependency of the workspace's crates: their differential tests run a Python snippet in
//! the TensorFlow 2.21 venv that `cargo xtask test` installs, and compare TensorFlow's answer
//! with ours. Not published.
//!
//! The interpreter is `$TFCLUSTER_PYTHON` if set, else `<workspace>/target/tf-venv/bin/python`.
//! A test that needs TensorFlow and cannot run it **fails** with a message saying how to get
//! it; it never skips silently.
//!
//! The same test suites share [`assert_bounded`], the check that an error message stays short
//! however large the input it quotes, and [`TestCa`], certificates for the TLS tests made when
//! they run (the `test-pki` crate's, re-exported).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod json;
mod messages;
mod process;
mod servers;
mod tally;

pub use json::{one_per_case, run_json};
pub use messages::{MAX_MESSAGE_BYTES, assert_bounded};
pub use process::{Process, STARTUP};
pub use servers::tf_servers;
pub use tally::Tally;
// The workspace's test PKI, re-exported for the TLS tests that already depend on this crate.
pub use test_pki::{Issued, PemFiles, TestCa};

/// How long one Python run may take before the test fails (TensorFlow's import alone takes a
/// few seconds; a loaded CI machine may need more).
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// The Python interpreter of the TensorFlow venv.
pub fn python() -> PathBuf {
    match std::env::var_os("TFCLUSTER_PYTHON") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/tf-venv/bin/python"),
    }
}

/// Starts the venv's python with `args`, TensorFlow quiet and on the CPU, every pipe piped.
///
/// # Panics
///
/// If Python cannot start, with how to get the venv.
fn start(args: &[&str]) -> Child {
    let python = python();
    Command::new(&python)
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .env("CUDA_VISIBLE_DEVICES", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run TensorFlow's python {}: {e}\n\
                 this test needs TensorFlow 2.21: run `cargo xtask tf-venv` (or `cargo xtask test`), \
                 or set TFCLUSTER_PYTHON to a python with tensorflow-cpu==2.21.0",
                python.display()
            )
        })
}

/// Runs `script` with `input` on its stdin in the TensorFlow venv and returns its stdout.
///
/// # Panics
///
/// If Python cannot start, the script fails, or it runs longer than [`TIMEOUT`]: the panic
/// message carries the script's stderr and how to install the venv (`cargo xtask tf-venv`).
pub fn run(script: &str, input: &str) -> String {
    let mut child = start(&["-c", script]);
    // Feed stdin and drain stdout and stderr from threads, so neither side can block on a
    // full pipe while the other waits.
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_owned();
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("TensorFlow script ran longer than {TIMEOUT:?}:\n{script}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for TensorFlow's python failed: {e}"),
        }
    };
    let _ = feeder.join();
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "TensorFlow script failed ({}):\n--- stderr ---\n{stderr}\n--- script ---\n{script}\n\
         (if tensorflow is missing: run `cargo xtask tf-venv`)",
        output.status
    );
    stdout
}

/// Lower-case hex of `bytes`, the form the scripts exchange protobuf bytes in.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string.
///
/// # Panics
///
/// If `s` is not an even-length string of hex digits (test input only).
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|_| panic!("bad hex {s:?}")))
        .collect()
}
