//! The networked commands end to end: `up`, `serve` processes, `connect` across processes,
//! faults, and real TensorFlow connecting to `serve` processes.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{stdout, tfcluster};

/// A `tfcluster serve` process, killed on drop.
pub(crate) struct Served {
    child: Child,
    /// Where it listens.
    pub(crate) address: String,
}

impl Served {
    /// The process id of the `tfcluster serve` process.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tfcluster serve` for task `task` of `job` on a free loopback port; waits for its
/// `serving ... at ADDRESS` line.
fn serve(job: &str, task: u32) -> Served {
    serve_with(job, task, &[])
}

/// [`serve`] with more arguments.
pub(crate) fn serve_with(job: &str, task: u32, more: &[&str]) -> Served {
    serve_under(
        Command::new(env!("CARGO_BIN_EXE_tfcluster")),
        job,
        task,
        more,
    )
}

/// [`serve_with`] started by `command`: the binary itself, or a wrapper that execs it with
/// the arguments that follow (`prlimit --nofile=1024:20000 -- BINARY`, which keeps the pid).
/// Its stderr goes where `command` sends it (inherited unless set).
pub(crate) fn serve_under(mut command: Command, job: &str, task: u32, more: &[&str]) -> Served {
    let cluster = format!(r#"{{"{job}": {{"{task}": "localhost:0"}}}}"#);
    let mut child = command
        .args([
            "serve",
            "--cluster",
            &cluster,
            "--job",
            job,
            "--task",
            &task.to_string(),
        ])
        .args(["--bind", "127.0.0.1:0"])
        .args(more)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .unwrap();
    let address = line
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(
        line.starts_with(&format!("serving /job:{job}/replica:0/task:{task} at ")),
        "{line}"
    );
    Served { child, address }
}

#[test]
fn up_shows_each_tasks_view_under_parameter_server_filters() {
    let out = tfcluster(&["up"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    for task in ["chief", "ps", "worker"] {
        assert!(
            text.contains(&format!("/job:{task}/replica:0/task:0")),
            "{text}"
        );
    }
    assert!(text.contains("visible devices (device filters)"), "{text}");

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&tfcluster(&["up", "--format", "json"]))).unwrap();
    let tasks = json["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    let worker0 = tasks
        .iter()
        .find(|t| t["task"] == "/job:worker/replica:0/task:0")
        .unwrap();
    let visible: Vec<&str> = worker0["visible"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(visible.contains(&"/job:ps/replica:0/task:0/device:CPU:0"));
    assert!(visible.contains(&"/job:chief/replica:0/task:0/device:CPU:0"));
    assert!(!visible.contains(&"/job:worker/replica:0/task:1/device:CPU:0"));

    let text = stdout(&tfcluster(&[
        "up",
        "--workers",
        "3",
        "--ps",
        "2",
        "--no-filters",
    ]));
    assert!(text.contains("/job:worker/replica:0/task:2"), "{text}");
    assert!(
        text.contains("no device filters: every task sees all 6 devices"),
        "{text}"
    );
}

#[test]
fn connect_to_serve_processes() {
    let served: Vec<Served> = (0..3).map(|i| serve("worker", i)).collect();
    let cluster = format!(
        r#"{{"worker": ["{}", "{}"], "ps": ["{}"]}}"#,
        served[0].address, served[1].address, served[2].address
    );
    // Served as worker:2, asked for as ps:0: a task takes the name the client gives it.
    let out = tfcluster(&["connect", "--cluster", &cluster, "--filters", "ps"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains(&served[2].address), "{text}");
    assert!(text.contains("visible devices (device filters)"), "{text}");

    let out = tfcluster(&["connect", "--cluster", &cluster, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tasks"].as_array().unwrap().len(), 3);
    assert_eq!(json["tasks"][0]["task"], "/job:ps/replica:0/task:0");
    assert_eq!(
        json["tasks"][0]["devices"][0],
        "/job:ps/replica:0/task:0/device:CPU:0"
    );
}

/// An address of loopback where nothing listens: port 1 (TCP's multiplexer, which nothing
/// here serves and only root could bind). Unlike a port drawn free and released, no other
/// test can take it meanwhile.
const DEAD: &str = "127.0.0.1:1";

/// `-vv` (debug) shows what a user debugging a connect needs: the update-vs-reset decision,
/// each stage with its timing, and each task's steps under its task and address.
#[test]
fn connect_logs_each_stage_and_task_at_debug() {
    let served = serve("worker", 0);
    let good = format!(r#"{{"worker": ["{}"]}}"#, served.address);
    let out = tfcluster(&["connect", "--cluster", &good, "-vv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let task = format!(
        "task{{task=/job:worker/replica:0/task:0 address={}}}",
        served.address
    );
    for wanted in [
        r#"connect_to_cluster decision="full reset" reason="not connected yet""#,
        "local task serving",
        "device discovery done tasks=1 failed=0",
        &format!("{task}: remote_connect::client::discovery: devices discovered devices=1"),
        &format!("{task}: remote_connect::client::create_request: remote context created"),
        "remote contexts created tasks=1 failed=0",
        "remote contexts closed",
    ] {
        assert!(log.contains(wanted), "no {wanted:?} in:\n{log}");
    }

    let bad = format!(r#"{{"worker": ["{}", "{DEAD}"]}}"#, served.address);
    let out = tfcluster(&["connect", "--cluster", &bad, "--timeout", "2s", "-vv"]);
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains(&format!(
            "task failed task=/job:worker/replica:0/task:1 address={DEAD}"
        )),
        "{log}"
    );
}

#[test]
fn connect_names_every_dead_or_silent_task_within_the_timeout() {
    let good = serve("worker", 0);
    // Accepts connections (the kernel does) and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let cluster = format!(
        r#"{{"worker": ["{}", "{DEAD}", "{silent_addr}"]}}"#,
        good.address
    );
    let started = Instant::now();
    let out = tfcluster(&["connect", "--cluster", &cluster, "--timeout", "1s"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{DEAD}: ")) && stderr.contains(&silent_addr),
        "{stderr}"
    );
    assert!(!stderr.contains(&format!("{} ", good.address)), "{stderr}");
    drop(silent);
}

#[test]
fn serve_stops_gracefully_on_sigterm() {
    let mut served = serve("worker", 0);
    let pid = served.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_cluster_and_filter_inputs_are_named() {
    let out = tfcluster(&["connect", "--cluster", r#"{"worker": ["nowhere"]}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"nowhere\""));
    let out = tfcluster(&["connect", "--cluster", "/nonexistent/cluster.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/cluster.json"));
    let out = tfcluster(&[
        "connect",
        "--cluster",
        r#"{"worker": ["localhost:1"]}"#,
        "--filters",
        r#"{"worker": {"0": ["/job:ps/"]}}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid filter"));
    let out = tfcluster(&["serve", "--cluster", r#"{"worker": ["localhost:0"]}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--job"));
}

/// Real TensorFlow 2.21 connecting to three `serve` processes mixed with a TF worker.
#[test]
fn tensorflow_connects_to_serve_processes() {
    const SCRIPT: &str = r#"
import json, socket, sys
import tensorflow as tf
cluster = json.loads(sys.argv[1])
# A free port, closed just before the server binds it: another process may take it between,
# and then a new one is drawn.
for attempt in range(3):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    cluster["worker"] = ["localhost:%d" % port]
    try:
        server = tf.distribute.Server(tf.train.ClusterSpec({"worker": cluster["worker"]}), job_name="worker", task_index=0, start=True)
        break
    except tf.errors.UnknownError:
        if attempt == 2: raise
tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec(cluster))
print("DEVICES", json.dumps([d.name for d in tf.config.list_logical_devices()]), flush=True)
"#;
    let served: Vec<Served> = (0..3).map(|i| serve("rust", i)).collect();
    let rust: Vec<&str> = served.iter().map(|s| s.address.as_str()).collect();
    let cluster = format!(r#"{{"rust": {}}}"#, serde_json::to_string(&rust).unwrap());
    let mut tf = tf_oracle::Process::spawn(SCRIPT, &[&cluster]);
    let listed: Vec<String> =
        serde_json::from_str(&tf.expect("DEVICES", tf_oracle::STARTUP)).unwrap();
    for name in [
        "/job:rust/replica:0/task:0/device:CPU:0",
        "/job:rust/replica:0/task:1/device:CPU:0",
        "/job:rust/replica:0/task:2/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
    ] {
        assert!(listed.iter().any(|n| n == name), "{name} not in {listed:?}");
    }
}

#[test]
fn connect_probe_runs_ops_and_checks_filters_on_tensorflow_workers() {
    let (tf, cluster) = tf_oracle::tf_servers(&[("ps", 1), ("worker", 2)]);
    let rust = serve("rust", 0);
    let mut spec: serde_json::Value = serde_json::from_str(&cluster).unwrap();
    spec["rust"] = serde_json::json!([rust.address]);
    let spec = spec.to_string();
    let out = tfcluster(&[
        "connect",
        "--cluster",
        &spec,
        "--filters",
        "ps",
        "--probe",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let probe = &json["probe"];
    let computes = |task: &str| {
        probe["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == task)
            .unwrap_or_else(|| panic!("{task} not probed: {probe}"))["computes"]
            .clone()
    };
    assert_eq!(computes("/job:worker/replica:0/task:1"), true);
    assert_eq!(computes("/job:ps/replica:0/task:0"), true);
    assert_eq!(
        computes("/job:rust/replica:0/task:0"),
        false,
        "a task server runs no ops"
    );
    let view = |task: &str, source: &str| {
        probe["views"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["task"] == task && v["source"] == source)
            .unwrap_or_else(|| panic!("no view {task} -> {source}: {probe}"))
            .clone()
    };
    // Observed by TensorFlow's workers themselves, equal to the prediction.
    let w0 = "/job:worker/replica:0/task:0";
    let w1 = "/job:worker/replica:0/task:1";
    let ps = "/job:ps/replica:0/task:0";
    assert_eq!(view(w0, w1)["observed"], false);
    assert_eq!(view(w0, ps)["observed"], true);
    assert_eq!(view(ps, w1)["observed"], true);
    assert_eq!(
        probe["views"].as_array().unwrap().len(),
        6,
        "3 computing tasks, both ways"
    );
    assert_eq!(probe["differences"], serde_json::json!([]));

    let table = tfcluster(&["connect", "--cluster", &spec, "--probe"]);
    let text = stdout(&table);
    assert!(table.status.success(), "{text}");
    assert!(
        text.contains("/job:rust/replica:0/task:0  cannot compute"),
        "{text}"
    );
    assert!(
        text.contains("/job:worker/replica:0/task:0  computes ("),
        "{text}"
    );
    drop(tf);
}
