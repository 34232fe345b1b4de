//! `spec validate` / `spec convert` between TensorFlow's forms (checked against TensorFlow's
//! own serializer and text-format parser), `hostlist compress` from standard input, resolve's
//! TF_CONFIG and shell forms, and shell completions.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use super::{stdout, tfcluster};

/// Runs the binary with `input` on standard input.
fn with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tfcluster"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

const SPEC: &str = r#"{"worker": ["w0:2222", "w1:2222"], "ps": {"3": "p:1"}}"#;

#[test]
fn convert_round_trips_through_every_form() {
    let text = with_stdin(
        &["spec", "convert", "--to", "cluster-def-text", "-"],
        SPEC.as_bytes(),
    );
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let binary = with_stdin(
        &["spec", "convert", "--to", "cluster-def", "-"],
        &text.stdout,
    );
    assert!(
        binary.status.success(),
        "{}",
        String::from_utf8_lossy(&binary.stderr)
    );
    let json = with_stdin(&["spec", "convert", "--to", "json", "-"], &binary.stdout);
    assert_eq!(
        stdout(&json),
        "{\"ps\":{\"3\":\"p:1\"},\"worker\":[\"w0:2222\",\"w1:2222\"]}\n"
    );
    let valid = with_stdin(&["spec", "validate", "-"], &binary.stdout);
    assert_eq!(stdout(&valid), "valid: 2 jobs, 3 tasks\n");
}

#[test]
fn tensorflows_forms_are_read_and_ours_are_read_by_tensorflow() {
    // TensorFlow's serialized ClusterDef in, our text format out, TensorFlow's parser back.
    const SCRIPT: &str = r#"
import sys
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.protobuf import cluster_pb2
spec = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {3: "p:1"}})
mode = sys.stdin.readline().strip()
if mode == "binary":
    print(spec.as_cluster_def().SerializeToString().hex())
else:
    parsed = text_format.Parse(sys.stdin.read(), cluster_pb2.ClusterDef())
    print(parsed == spec.as_cluster_def())
"#;
    let hex = tf_oracle::run(SCRIPT, "binary\n");
    let bytes = tf_oracle::unhex(hex.trim());
    let json = with_stdin(
        &[
            "spec",
            "convert",
            "--from",
            "cluster-def",
            "--to",
            "json",
            "-",
        ],
        &bytes,
    );
    assert_eq!(
        stdout(&json),
        "{\"ps\":{\"3\":\"p:1\"},\"worker\":[\"w0:2222\",\"w1:2222\"]}\n"
    );
    let text = with_stdin(
        &["spec", "convert", "--to", "cluster-def-text", "-"],
        SPEC.as_bytes(),
    );
    let answer = tf_oracle::run(SCRIPT, &format!("text\n{}", stdout(&text)));
    assert_eq!(answer.trim(), "True");
}

#[test]
fn invalid_files_name_the_problem() {
    let out = with_stdin(
        &["spec", "validate", "-"],
        br#"job { name: "w" tasks { key: 0 value: "nohost" } }"#,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"invalid address "nohost" for task 0 of job 'w'"#),
        "{stderr}"
    );
    let out = with_stdin(&["spec", "validate", "-"], br#"job { nme: "w" }"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nme"));
    let out = with_stdin(
        &["spec", "validate", "--from", "cluster-def", "-"],
        &[0x0a, 0x05, 0x0a],
    );
    assert_eq!(out.status.code(), Some(1));
    let out = tfcluster(&["spec", "validate", "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.json"));
}

#[test]
fn hostlist_compress_reads_standard_input() {
    let out = with_stdin(&["hostlist", "compress"], b"n1 n2\nn3\ngpu7\n");
    assert_eq!(stdout(&out), "n[1-3],gpu7\n");
}

#[test]
fn resolve_writes_this_tasks_tf_config_for_a_shell() {
    let tf_config = r#"{"cluster": {"worker": ["w0:2222", "w1:2222"]}, "task": {"type": "worker", "index": 1}}"#;
    let out = Command::new(env!("CARGO_BIN_EXE_tfcluster"))
        .args(["resolve", "--from", "tf-config", "--format", "env"])
        .env_clear()
        .env("TF_CONFIG", tf_config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout(&out);
    assert!(line.starts_with("export TF_CONFIG='{"), "{line}");
    let json = line
        .trim_end()
        .trim_start_matches("export TF_CONFIG='")
        .trim_end_matches('\'');
    let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(parsed["task"]["index"], 1);
    assert_eq!(parsed["cluster"]["worker"][1], "w1:2222");
}

#[test]
fn completions_for_shells() {
    let out = tfcluster(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("tfcluster"));
    assert_eq!(
        tfcluster(&["completions", "nosuchshell"]).status.code(),
        Some(2)
    );
}

#[test]
fn resolve_on_slurm_exports_this_ranks_gpus() {
    let out = Command::new(env!("CARGO_BIN_EXE_tfcluster"))
        .args(["resolve", "--from", "slurm", "--format", "env"])
        .env_clear()
        .envs([
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "2"),
            ("SLURM_STEP_NODELIST", "node1"),
            ("SLURM_STEP_TASKS_PER_NODE", "2"),
            ("SLURMD_NODENAME", "node1"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("\"index\":1"), "{text}");
    assert!(
        text.ends_with("export CUDA_VISIBLE_DEVICES='1'\n"),
        "{text}"
    );
}

#[test]
fn clusters_from_files() {
    let dir = super::scratch("forms");
    let tf_config = dir.path().join("tf_config.json");
    std::fs::write(
        &tf_config,
        r#"{"cluster": {"worker": ["w0:2222", "w1:2222"]}, "task": {"type": "worker", "index": 1}}"#,
    )
    .unwrap();
    let spec = dir.path().join("cluster.json");
    std::fs::write(&spec, r#"{"ps": ["p0:2222"]}"#).unwrap();
    let json = |path: &std::path::Path| -> serde_json::Value {
        let out = tfcluster(&[
            "resolve",
            "--from",
            "file",
            "--file",
            path.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let from_tf_config = json(&tf_config);
    assert_eq!(from_tf_config["task_id"], 1);
    assert_eq!(from_tf_config["master"], "w1:2222");
    let from_spec = json(&spec);
    assert_eq!(from_spec["cluster"]["ps"][0], "p0:2222");
    assert_eq!(from_spec["task_type"], serde_json::Value::Null);
    let out = tfcluster(&["resolve", "--from", "file"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--file"));
}

#[test]
fn serve_announces_itself_as_json() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tfcluster"))
        .args(["serve", "--cluster", r#"{"worker": ["localhost:0"]}"#])
        .args([
            "--job",
            "worker",
            "--task",
            "0",
            "--bind",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let json: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(json["task"], "/job:worker/replica:0/task:0");
    assert!(json["address"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(
        json["devices"][0],
        "/job:worker/replica:0/task:0/device:CPU:0"
    );
}

/// Built with `--features kubernetes` (CI's `--all-features`): outside a cluster and without a
/// kubeconfig, the error says why, after trying both configurations.
#[cfg(feature = "kubernetes")]
#[test]
fn kubernetes_without_a_cluster_says_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_tfcluster"))
        .args([
            "resolve",
            "--from",
            "kubernetes",
            "--k8s-job",
            "worker=job-name=tf",
        ])
        .env_clear()
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // Both configurations were tried, and each says why it failed.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for why in [
        "cannot configure a Kubernetes client: in-cluster config: failed to read an incluster \
         environment variable",
        "; kubeconfig: failed to read kubeconfig from '\"/nonexistent/.kube/config\"'",
    ] {
        assert!(stderr.contains(why), "{stderr}");
    }
    let out = tfcluster(&["resolve", "--from", "kubernetes", "--k8s-job", "nojob"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JOB=SELECTOR"));
}

/// Built with `--features gce`: the instance group must be named in full.
#[cfg(feature = "gce")]
#[test]
fn gce_needs_its_instance_group() {
    let out = tfcluster(&["resolve", "--from", "gce", "--gce-project", "p"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--from gce needs --gce-project, --gce-zone"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_format_json_parses() {
    let dir = super::scratch("json");
    let spec = dir.path().join("cluster.json");
    std::fs::write(&spec, SPEC).unwrap();
    let spec = spec.to_str().unwrap();
    for args in [
        vec!["up", "--format", "json"],
        vec!["spec", "validate", spec, "--format", "json"],
        vec![
            "resolve", "--from", "file", "--file", spec, "--format", "json",
        ],
        vec!["hostlist", "expand", "n[1-3]", "--format", "json"],
        vec!["hostlist", "compress", "n1", "n2", "--format", "json"],
        vec!["hostlist", "tasks-per-node", "2(x2),1", "--format", "json"],
    ] {
        let out = tfcluster(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<serde_json::Value>(&stdout(&out))
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)));
    }
}
