//! `tfcluster run` as a launcher: the environment it hands over, exit statuses and signals
//! passed on, and `--local` jobs decided, stopped and cleaned up as TensorFlow users expect.
//! The tasks here are small Python or shell programs; `train.rs` runs real TensorFlow.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::launch::{Launch, assert_all_gone};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A task that reads its identity from TF_CONFIG and acts on the plan in `sys.argv[1]`
/// (`worker:1=exit1,*=hang`): `exitN` exits N after a moment, `hang` sleeps until stopped,
/// `deaf` ignores SIGINT and SIGTERM. First it starts a helper (in its process group, as
/// TensorFlow's own helpers would be) and prints `pids TASK PID HELPER_PID`.
const TASK: &str = r#"
import json, os, signal, subprocess, sys, time
task = json.loads(os.environ["TF_CONFIG"])["task"]
name = f'{task["type"]}:{task["index"]}'
plan = dict(part.split("=") for part in sys.argv[1].split(","))
action = plan.get(name, plan.get("*"))
helper = subprocess.Popen(["sleep", "1000"])
print(f"pids {name} {os.getpid()} {helper.pid}", flush=True)
if action.startswith("exit"):
    time.sleep(1)
    sys.exit(int(action[4:]))
if action == "deaf":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(1)
"#;

/// `tfcluster run --local JOBS --grace GRACE -- python -c TASK PLAN`.
fn local_job(jobs: &str, grace: &str, plan: &str) -> Launch {
    let python = tf_oracle::python();
    let python = python.to_str().expect("a UTF-8 path");
    Launch::start(
        &[
            "run", "--local", jobs, "--grace", grace, "--", python, "-c", TASK, plan,
        ],
        &[],
    )
}

/// Every pid the tasks printed (theirs and their helpers').
fn pids(launch: &Launch, tasks: usize) -> Vec<u32> {
    launch
        .lines_with(" pids ", tasks, TIMEOUT)
        .iter()
        .flat_map(|line| line.split_whitespace().skip(3).map(|p| p.parse().unwrap()))
        .collect()
}

const TF_CONFIG: &str = r#"{"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]},
                            "task": {"type": "worker", "index": 1}}"#;
const WRITTEN: &str = r#"{"cluster":{"chief":["c0:2222"],"worker":["w0:2222","w1:2222"]},"task":{"type":"worker","index":1}}"#;

#[test]
fn dry_run_prints_the_environment_in_each_format() {
    let mut out = Launch::start(&["run", "--dry-run"], &[("TF_CONFIG", TF_CONFIG)]);
    assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
    assert_eq!(out.stdout(), format!("TF_CONFIG={WRITTEN}\n"));

    let mut out = Launch::start(
        &[
            "run",
            "--dry-run",
            "--format",
            "json",
            "--",
            "python",
            "t.py",
        ],
        &[("TF_CONFIG", TF_CONFIG)],
    );
    assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
    let json: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(json["tasks"][0]["env"]["TF_CONFIG"], WRITTEN);
    assert_eq!(json["command"], serde_json::json!(["python", "t.py"]));

    // Rank 3 of `srun -N3 -n5` on a node whose GPUs are 4..7: its two, as the resolver says.
    let slurm = [
        ("SLURM_PROCID", "3"),
        ("SLURM_STEP_NUM_TASKS", "5"),
        ("SLURM_STEP_NODELIST", "node[1-3]"),
        ("SLURM_STEP_TASKS_PER_NODE", "2(x2),1"),
        ("SLURMD_NODENAME", "node2"),
        ("CUDA_VISIBLE_DEVICES", "4,5,6,7"),
    ];
    let mut out = Launch::start(&["run", "--from", "slurm", "--dry-run"], &slurm);
    assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
    assert_eq!(
        out.stdout(),
        "TF_CONFIG={\"cluster\":{\"worker\":[\"node1:8888\",\"node1:8889\",\"node2:8888\",\
         \"node2:8889\",\"node3:8888\"]},\"task\":{\"type\":\"worker\",\"index\":3},\
         \"rpc_layer\":\"grpc\"}\nCUDA_VISIBLE_DEVICES=6,7\n"
    );
}

#[test]
fn a_cluster_file_with_the_task_given_on_the_command_line() {
    let path = std::env::temp_dir().join(format!("tfcluster-run-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]}"#,
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let mut out = Launch::start(
        &[
            "run",
            "--from",
            "file",
            "--file",
            file,
            "--job",
            "worker",
            "--task",
            "1",
            "--dry-run",
        ],
        &[],
    );
    let status = out.wait(TIMEOUT);
    std::fs::remove_file(&path).unwrap();
    assert!(status.success(), "{}", out.stderr());
    assert_eq!(out.stdout(), format!("TF_CONFIG={WRITTEN}\n"));
}

#[test]
fn help_shows_both_forms_with_examples() {
    let mut out = Launch::start(&["run", "--help"], &[]);
    assert!(out.wait(TIMEOUT).success());
    let help = out.stdout();
    for example in [
        "srun -N3 -n3 tfcluster run --from slurm -- python train.py",
        "tfcluster run --local chief=1,worker=2,ps=1",
        "--grace",
        "--dry-run",
    ] {
        assert!(help.contains(example), "{help}");
    }
}

#[test]
fn local_dry_run_gives_every_task_its_own_port() {
    let mut out = Launch::start(
        &[
            "run",
            "--local",
            "chief=1,worker=2,ps=1",
            "--dry-run",
            "--format",
            "json",
        ],
        &[],
    );
    assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
    let json: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let tasks = json["tasks"].as_array().unwrap();
    let names: Vec<&str> = tasks.iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(names, ["chief:0", "worker:0", "worker:1", "ps:0"]);
    let configs: Vec<serde_json::Value> = tasks
        .iter()
        .map(|t| serde_json::from_str(t["env"]["TF_CONFIG"].as_str().unwrap()).unwrap())
        .collect();
    let cluster = &configs[0]["cluster"];
    assert!(configs.iter().all(|c| &c["cluster"] == cluster));
    assert_eq!(
        configs[2]["task"],
        serde_json::json!({"type": "worker", "index": 1})
    );
    let mut addresses: Vec<&str> = ["chief", "worker", "ps"]
        .iter()
        .flat_map(|job| cluster[job].as_array().unwrap())
        .map(|a| a.as_str().unwrap())
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    assert_eq!(addresses.len(), 4, "{cluster}");
}

#[test]
fn the_command_gets_tf_config_and_its_status_is_ours() {
    let mut out = Launch::start(
        &["run", "--", "sh", "-c", "printf %s \"$TF_CONFIG\"; exit 3"],
        &[("TF_CONFIG", TF_CONFIG)],
    );
    assert_eq!(out.wait(TIMEOUT).code(), Some(3), "{}", out.stderr());
    assert_eq!(out.stdout(), WRITTEN);
    assert_eq!(out.stderr(), "");
    let mut out = Launch::start(
        &["run", "--", "sh", "-c", "kill -TERM $$"],
        &[("TF_CONFIG", TF_CONFIG)],
    );
    assert_eq!(out.wait(TIMEOUT).code(), Some(128 + 15));
}

#[test]
fn a_resolution_error_runs_nothing() {
    let marker = std::env::temp_dir().join(format!("tfcluster-run-{}", std::process::id()));
    let marker_arg = marker.to_str().unwrap();
    let mut out = Launch::start(
        &["run", "--from", "tf-config", "--", "touch", marker_arg],
        &[(
            "TF_CONFIG",
            r#"{"cluster": {"worker": ["w0"]}, "task": {"type": "worker", "index": 0}}"#,
        )],
    );
    assert_eq!(out.wait(TIMEOUT).code(), Some(1));
    assert!(
        out.stderr().contains(r#"invalid address "w0""#),
        "{}",
        out.stderr()
    );
    assert!(!Path::new(&marker).exists(), "the command ran");
    // A cluster without this task: nothing runs either.
    let mut out = Launch::start(
        &["run", "--from", "tf-config", "--", "touch", marker_arg],
        &[("TF_CONFIG", r#"{"cluster": {"worker": ["w0:1"]}}"#)],
    );
    assert_eq!(out.wait(TIMEOUT).code(), Some(1));
    assert!(
        out.stderr().contains("no TF_CONFIG to write"),
        "{}",
        out.stderr()
    );
    assert!(!Path::new(&marker).exists(), "the command ran");
}

#[test]
fn sigterm_is_passed_on_to_the_command() {
    let mut out = Launch::start(
        &[
            "run",
            "--",
            "sh",
            "-c",
            "trap 'echo got TERM; exit 5' TERM; echo ready; while :; do sleep 0.1; done",
        ],
        &[("TF_CONFIG", TF_CONFIG)],
    );
    out.lines_with("ready", 1, TIMEOUT);
    out.signal(Signal::SIGTERM);
    assert_eq!(out.wait(TIMEOUT).code(), Some(5), "{}", out.stderr());
    assert!(out.stdout().contains("got TERM\n"));
}

#[test]
fn local_output_is_prefixed_and_keeps_its_stream() {
    let mut out = Launch::start(
        &[
            "run",
            "--local",
            "worker=2",
            "--",
            "sh",
            "-c",
            "echo out; printf 'err\\npartial' >&2",
        ],
        &[],
    );
    assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
    let mut stdout: Vec<String> = out.stdout().lines().map(str::to_owned).collect();
    stdout.sort();
    assert_eq!(stdout, ["[worker:0] out", "[worker:1] out"]);
    let stderr = out.stderr();
    for line in [
        "[worker:0] err\n",
        "[worker:1] err\n",
        "[worker:1] partial\n",
    ] {
        assert!(stderr.contains(line), "{stderr}");
    }
}

#[test]
fn a_failing_task_stops_the_job_and_is_named() {
    let started = Instant::now();
    let mut job = local_job("chief=1,worker=2", "5s", "worker:1=exit1,*=hang");
    let pids = pids(&job, 3);
    assert_eq!(job.wait(TIMEOUT).code(), Some(1));
    assert!(
        job.stderr()
            .contains("task worker:1 (/job:worker/replica:0/task:1) failed: exit status: 1"),
        "{}",
        job.stderr()
    );
    // The others died of the SIGTERM, well within the grace period.
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_all_gone(&pids);
}

#[test]
fn sigint_stops_a_hanging_job_and_leaves_nothing_running() {
    // The chief ignores the signals, so it is killed after the grace period.
    let mut job = local_job("chief=1,worker=1", "2s", "chief:0=deaf,*=hang");
    let pids = pids(&job, 2);
    job.signal(Signal::SIGINT);
    assert_eq!(job.wait(TIMEOUT).code(), Some(128 + 2));
    assert!(
        job.stderr()
            .contains("stopped by SIGINT: every task was stopped"),
        "{}",
        job.stderr()
    );
    assert_all_gone(&pids);
}

#[test]
fn chief_success_stops_the_serving_tasks_and_succeeds() {
    // ParameterServerStrategy's shape: workers and ps serve until stopped.
    let started = Instant::now();
    let mut job = local_job("chief=1,worker=2,ps=1", "1s", "chief:0=exit0,*=hang");
    let pids = pids(&job, 4);
    let status = job.wait(TIMEOUT);
    assert!(status.success(), "{status}\n{}", job.stderr());
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_all_gone(&pids);
}

#[test]
fn workers_that_finish_on_their_own_succeed_without_a_stop() {
    // MultiWorkerMirroredStrategy's shape: no chief, every worker exits when training ends.
    let mut job = local_job("worker=3", "30s", "*=exit0");
    let pids = pids(&job, 3);
    let started = Instant::now();
    assert!(job.wait(TIMEOUT).success(), "{}", job.stderr());
    // No grace period was waited out: everyone had exited.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_all_gone(&pids);
}

#[test]
fn bad_local_jobs_are_usage_errors() {
    let mut out = Launch::start(&["run", "--local", "ps=2", "--", "true"], &[]);
    assert_eq!(out.wait(TIMEOUT).code(), Some(2));
    assert!(
        out.stderr().contains("no chief and no worker"),
        "{}",
        out.stderr()
    );
    let mut out = Launch::start(&["run", "--local", "worker=2"], &[]);
    assert_eq!(out.wait(TIMEOUT).code(), Some(2));
}

#[test]
fn a_missing_program_is_named() {
    for args in [
        &["run", "--", "/nonexistent/train"][..],
        &["run", "--local", "worker=2", "--", "/nonexistent/train"][..],
    ] {
        let mut out = Launch::start(args, &[("TF_CONFIG", TF_CONFIG)]);
        assert_eq!(out.wait(TIMEOUT).code(), Some(1));
        assert!(
            out.stderr().contains("cannot run /nonexistent/train: "),
            "{}",
            out.stderr()
        );
    }
}
