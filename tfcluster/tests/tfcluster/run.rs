//! `tfcluster run` as a launcher: the environment it hands over, exit statuses and signals
//! passed on, and `--local` jobs decided, stopped and cleaned up as TensorFlow users expect.
//! The tasks here are small Python or shell programs; `train.rs` runs real TensorFlow.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::launch::{Launch, assert_all_gone};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A task that reads its identity from TF_CONFIG and acts on the plan in `sys.argv[1]`
/// (`worker:1=exit1,*=hang`): `hang` sleeps until stopped, `obey` exits on SIGINT or SIGTERM,
/// `deaf` ignores them, `exitN` exits N once every other kind of task is ready, so a stop it
/// causes finds their handlers in place. First it starts a helper (in its process group, as
/// TensorFlow's own helpers would be) and prints `pids TASK PID HELPER_PID`; when ready it
/// listens on its address, as a TensorFlow server would.
///
/// It also prints what happens to it as `event TASK WHAT TIME`, on `time.monotonic()`, the
/// one clock of every process here: `ready`, the name of each signal it handles, `exit` as it
/// exits, and `deaf` prints `alive` every 0.1 s. The tests time the launcher by these, free
/// of how late the output reaches them.
const TASK: &str = r#"
import json, os, signal, socket, subprocess, sys, time
tf_config = json.loads(os.environ["TF_CONFIG"])
task = tf_config["task"]
name = f'{task["type"]}:{task["index"]}'
plan = dict(part.split("=") for part in sys.argv[1].split(","))
def action_of(name):
    return plan.get(name, plan.get("*"))
action = action_of(name)
helper = subprocess.Popen(["sleep", "1000"])
print(f"pids {name} {os.getpid()} {helper.pid}", flush=True)
def event(what):
    print(f"event {name} {what} {time.monotonic():.3f}", flush=True)
def handle(signum, frame):
    event(signal.Signals(signum).name)
    if action == "obey":
        sys.exit(0)
if action in ("obey", "deaf"):
    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
def address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)
server = socket.create_server(address(tf_config["cluster"][task["type"]][task["index"]]))
event("ready")
if action.startswith("exit"):
    for job, addresses in tf_config["cluster"].items():
        for index, other in enumerate(addresses):
            if action_of(f"{job}:{index}").startswith("exit"):
                continue
            while True:
                try:
                    socket.create_connection(address(other), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
    event("exit")
    sys.exit(int(action[4:]))
while True:
    if action == "deaf":
        event("alive")
    time.sleep(0.1)
"#;

/// `tfcluster run --local JOBS --grace GRACE -- python -c TASK PLAN`.
fn local_job(jobs: &str, grace: &str, plan: &str) -> Launch {
    local_job_with(jobs, &["--grace", grace], plan)
}

/// `tfcluster run --local JOBS FLAGS -- python -c TASK PLAN`.
fn local_job_with(jobs: &str, flags: &[&str], plan: &str) -> Launch {
    let python = tf_oracle::python();
    let python = python.to_str().expect("a UTF-8 path");
    let args = [
        &["run", "--local", jobs][..],
        flags,
        &["--", python, "-c", TASK, plan],
    ]
    .concat();
    Launch::start(&args, &[])
}

/// Every pid the tasks printed (theirs and their helpers').
fn pids(launch: &Launch, tasks: usize) -> Vec<u32> {
    launch
        .lines_with(" pids ", tasks, TIMEOUT)
        .iter()
        .flat_map(|line| line.split_whitespace().skip(3).map(|p| p.parse().unwrap()))
        .collect()
}

/// When `task` printed event `what`, each time, in seconds on the tasks' clock.
fn times(launch: &Launch, task: &str, what: &str) -> Vec<f64> {
    let needle = format!(" event {task} {what} ");
    launch
        .stdout()
        .lines()
        .filter_map(|line| Some(line.split_once(&needle)?.1.parse().unwrap()))
        .collect()
}

/// When `task` first printed event `what`.
fn first(launch: &Launch, task: &str, what: &str) -> f64 {
    let times = times(launch, task, what);
    *times
        .first()
        .unwrap_or_else(|| launch.fail(&format!("{task} printed no {what}")))
}

/// How long `deaf` lived after it first got `signal`: until its last heartbeat before the
/// SIGKILL, so at most 0.1 s (and whatever it waited for the CPU) short of its death.
fn survived(launch: &Launch, deaf: &str, signal: &str) -> f64 {
    let alive = times(launch, deaf, "alive");
    alive.last().expect("deaf printed alive") - first(launch, deaf, signal)
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
    let dir = super::scratch("run-file");
    let path = dir.path().join("cluster.json");
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
    let dir = super::scratch("run-marker");
    let marker = dir.path().join("ran");
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

/// The `--grace` of the tests that time a stop: long enough that "well before the grace ends"
/// and "after it" differ by far more than a busy machine's scheduling.
const GRACE: f64 = 4.0;

#[test]
fn a_failing_task_stops_the_job_and_is_named() {
    let grace = format!("{GRACE}s");
    let mut job = local_job_with(
        "chief=1,worker=2",
        &["--grace", "60s", "--failure-grace", &grace],
        "worker:1=exit1,chief:0=obey,worker:0=deaf",
    );
    let pids = pids(&job, 3);
    assert_eq!(job.wait(TIMEOUT).code(), Some(1));
    assert!(
        job.stderr()
            .contains("task worker:1 (/job:worker/replica:0/task:1) failed: exit status: 1"),
        "{}",
        job.stderr()
    );
    // SIGTERM came at once: the task that obeys it was gone well before the grace ended.
    let failed = first(&job, "worker:1", "exit");
    for task in ["chief:0", "worker:0"] {
        let stopped = first(&job, task, "SIGTERM") - failed;
        assert!(
            (0.0..GRACE / 2.0).contains(&stopped),
            "{task}: SIGTERM after {stopped} s"
        );
    }
    // SIGKILL came at the end of the grace: the task that ignores SIGTERM lived it out.
    let survived = survived(&job, "worker:0", "SIGTERM");
    assert!(
        (GRACE - 1.0..GRACE * 1.5).contains(&survived),
        "lived {survived} s after SIGTERM"
    );
    assert_all_gone(&pids);
}

#[test]
fn without_a_failure_grace_a_failure_kills_the_others_at_once() {
    // The long --grace is for clean stops: a failure waits none of it, and sends no SIGTERM
    // that a TensorFlow worker would take as a preemption notice.
    let mut job = local_job(
        "chief=1,worker=2",
        "60s",
        "worker:1=exit1,chief:0=obey,worker:0=deaf",
    );
    let pids = pids(&job, 3);
    assert_eq!(job.wait(TIMEOUT).code(), Some(1));
    assert!(job.stderr().contains("task worker:1"), "{}", job.stderr());
    let failed = first(&job, "worker:1", "exit");
    for task in ["chief:0", "worker:0"] {
        assert!(
            times(&job, task, "SIGTERM").is_empty(),
            "{task} got SIGTERM"
        );
    }
    let alive = times(&job, "worker:0", "alive");
    let lived = alive.last().expect("deaf printed alive") - failed;
    assert!(
        lived < GRACE / 2.0,
        "the deaf task lived {lived} s after the failure"
    );
    assert_all_gone(&pids);
}

#[test]
fn sigint_stops_a_hanging_job_and_leaves_nothing_running() {
    let mut job = local_job(
        "chief=1,worker=1",
        &format!("{GRACE}s"),
        "chief:0=deaf,worker:0=obey",
    );
    let pids = pids(&job, 2);
    job.lines_with(" ready ", 2, TIMEOUT);
    job.signal(Signal::SIGINT);
    assert_eq!(job.wait(TIMEOUT).code(), Some(128 + 2));
    assert!(
        job.stderr()
            .contains("stopped by SIGINT: every task was stopped"),
        "{}",
        job.stderr()
    );
    // Every task got the SIGINT at once; the chief, which ignores it, was killed after the
    // grace period and not before.
    let apart = first(&job, "worker:0", "SIGINT") - first(&job, "chief:0", "SIGINT");
    assert!(apart.abs() < GRACE / 2.0, "SIGINTs {apart} s apart");
    let survived = survived(&job, "chief:0", "SIGINT");
    assert!(
        (GRACE - 1.0..GRACE * 1.5).contains(&survived),
        "lived {survived} s after SIGINT"
    );
    assert_all_gone(&pids);
}

#[test]
fn chief_success_stops_the_serving_tasks_and_succeeds() {
    // ParameterServerStrategy's shape: workers and ps serve until stopped.
    let mut job = local_job(
        "chief=1,worker=2,ps=1",
        &format!("{GRACE}s"),
        "chief:0=exit0,*=obey",
    );
    let pids = pids(&job, 4);
    let status = job.wait(TIMEOUT);
    assert!(status.success(), "{status}\n{}", job.stderr());
    // The others had the grace period to exit on their own, then got SIGTERM. (The chief's
    // exit was seen after it printed, so the lower bound needs no slack but the rounding.)
    let succeeded = first(&job, "chief:0", "exit");
    for task in ["worker:0", "worker:1", "ps:0"] {
        let stopped = first(&job, task, "SIGTERM") - succeeded;
        assert!(
            (GRACE - 0.01..GRACE * 1.5).contains(&stopped),
            "{task}: SIGTERM {stopped} s after the chief's success"
        );
    }
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

/// `--local` shares this host's GPUs among its tasks as `--rdzv` does, here the ones
/// CUDA_VISIBLE_DEVICES names (so no driver is asked, on any machine).
#[test]
fn local_tasks_get_their_share_of_the_gpus() {
    let echo = ["--", "sh", "-c", "echo \"gpus=[$CUDA_VISIBLE_DEVICES]\""];
    let shares = |args: &[&str], visible: &str| {
        let mut out = Launch::start(args, &[("CUDA_VISIBLE_DEVICES", visible)]);
        assert!(out.wait(TIMEOUT).success(), "{}", out.stderr());
        let mut lines: Vec<String> = out.stdout().lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    fn run<'a>(more: &[&'a str], echo: &[&'a str]) -> Vec<&'a str> {
        [&["run", "--local", "chief=1,worker=2"][..], more, echo].concat()
    }
    // Evenly by default: 5 GPUs, 3 tasks, one each (the fifth stays unused).
    assert_eq!(
        shares(&run(&[], &echo), "0,1,2,3,4"),
        [
            "[chief:0] gpus=[0]",
            "[worker:0] gpus=[1]",
            "[worker:1] gpus=[2]"
        ]
    );
    // As many as asked, named as the variable names them.
    assert_eq!(
        shares(
            &run(&["--gpus-per-task", "2"], &echo),
            "GPU-a,GPU-b,GPU-c,GPU-d,MIG-e,MIG-f"
        ),
        [
            "[chief:0] gpus=[GPU-a,GPU-b]",
            "[worker:0] gpus=[GPU-c,GPU-d]",
            "[worker:1] gpus=[MIG-e,MIG-f]"
        ]
    );
    // Fewer GPUs than tasks: none each; 0 hides them all.
    assert_eq!(
        shares(&run(&[], &echo), "0,1"),
        [
            "[chief:0] gpus=[]",
            "[worker:0] gpus=[]",
            "[worker:1] gpus=[]"
        ]
    );
    assert_eq!(
        shares(&run(&["--gpus-per-task", "0"], &echo), "0,1,2"),
        [
            "[chief:0] gpus=[]",
            "[worker:0] gpus=[]",
            "[worker:1] gpus=[]"
        ]
    );
    // One GPU, three tasks: the even split gives none each; `all` shares it, each task
    // seeing it and growing its memory as it needs it.
    let grow = [
        "--",
        "sh",
        "-c",
        "echo \"gpus=[$CUDA_VISIBLE_DEVICES] grow=$TF_FORCE_GPU_ALLOW_GROWTH\"",
    ];
    assert_eq!(
        shares(&run(&["--gpus-per-task", "all"], &grow), "0"),
        [
            "[chief:0] gpus=[0] grow=true",
            "[worker:0] gpus=[0] grow=true",
            "[worker:1] gpus=[0] grow=true"
        ]
    );
    // More than the host has: TensorFlow's words, and nothing runs.
    let mut out = Launch::start(
        &run(&["--gpus-per-task", "2"], &echo),
        &[("CUDA_VISIBLE_DEVICES", "0,1,2,3")],
    );
    assert_eq!(out.wait(TIMEOUT).code(), Some(1));
    assert!(
        out.stderr()
            .contains("Requested more GPUs per node than available."),
        "{}",
        out.stderr()
    );
    assert_eq!(out.stdout(), "");
    // Only a launcher shares GPUs.
    let mut out = Launch::start(&["run", "--gpus-per-task", "1", "--", "true"], &[]);
    assert_eq!(out.wait(TIMEOUT).code(), Some(2));
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

/// A `--local` task for the failure-domain tests, by role: each worker (or the evaluator)
/// prints `start JOB RESTART_COUNT` and acts by its restart count from `$PLAN`
/// (`0=exit42,1=fail:OSError,*=serve`: `exitN` exits N, `fail:TEXT` prints TEXT on stderr and
/// exits 3, `serve` touches `$DIR/up` and serves); the chief waits for `$DIR/up` and exits 0;
/// anything else serves.
const ROLES: &str = r#"
case "$TF_CONFIG" in
  *'"type":"chief"'*)
    while [ ! -e "$DIR/up" ]; do sleep 0.05; done; exit 0 ;;
  *'"type":"worker"'*|*'"type":"evaluator"'*)
    echo "start ${TF_CONFIG##*\"type\":\"} $TFCLUSTER_RESTART_COUNT"
    action=$(echo "$PLAN" | tr , '\n' | sed -n "s/^$TFCLUSTER_RESTART_COUNT=//p")
    [ -n "$action" ] || action=$(echo "$PLAN" | tr , '\n' | sed -n 's/^\*=//p')
    case "$action" in
      exit*) exit "${action#exit}" ;;
      fail:*) echo "${action#fail:}" >&2; exit 3 ;;
      serve) touch "$DIR/up"; exec sleep 1000 ;;
    esac ;;
  *) exec sleep 1000 ;;
esac
"#;

/// `tfcluster run --local JOBS FLAGS -- sh -c ROLES` with `PLAN`, waited for: its exit
/// status, and it.
fn roles(jobs: &str, flags: &[&str], plan: &str) -> (Option<i32>, Launch) {
    let dir = super::scratch("roles");
    let dir_text = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let args = [
        &["run", "--local", jobs, "--grace", "1s"][..],
        flags,
        &["--", "sh", "-c", ROLES],
    ]
    .concat();
    let mut job = Launch::start(&args, &[("PLAN", plan), ("DIR", &dir_text)]);
    (job.wait(TIMEOUT).code(), job)
}

/// The `start` lines the tasks printed, in restart order: `JOB","index":I}... COUNT` trimmed to the
/// restart counts.
fn starts(job: &Launch) -> Vec<String> {
    let mut starts: Vec<String> = job
        .stdout()
        .lines()
        .filter(|l| l.contains("] start "))
        .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
        .collect();
    // In restart order: two processes' pipes (a task and its restart) are read apart, so
    // their lines may come out of order on a busy machine.
    starts.sort_by_key(|s| s.parse::<u32>().unwrap_or(u32::MAX));
    starts
}

#[test]
fn a_parameter_server_worker_restarts_in_place_and_a_planned_exit_costs_nothing() {
    // Exit 42 (planned), then a failure (the one restart --max-task-restarts 1 allows),
    // then it serves: the chief, which ran throughout, succeeds.
    let (code, job) = roles(
        "chief=1,worker=1,ps=1",
        &["--max-task-restarts", "1"],
        "0=exit42,1=fail:OSError: disk,*=serve",
    );
    assert_eq!(code, Some(0), "{}", job.stderr());
    assert_eq!(starts(&job), ["0", "1", "2"], "{}", job.stdout());
    let stderr = job.stderr();
    assert_eq!(
        stderr.matches("restarting the task in place").count(),
        2,
        "{stderr}"
    );
}

#[test]
fn a_task_past_its_restarts_fails_the_job_saying_so() {
    let (code, job) = roles(
        "chief=1,worker=1,ps=1",
        &["--max-task-restarts", "1"],
        "0=fail:OSError: disk,1=fail:ValueError: bad,*=serve",
    );
    assert_eq!(code, Some(1), "{}", job.stderr());
    assert_eq!(starts(&job), ["0", "1"], "{}", job.stdout());
    let stderr = job.stderr();
    assert!(
        stderr.contains(
            "task worker:0 (/job:worker/replica:0/task:0) failed: exit status: 3 (its failure 2, \
             more than --max-task-restarts 1); the other tasks were stopped"
        ),
        "{stderr}"
    );
}

#[test]
fn the_same_failure_twice_without_progress_is_a_crash_loop() {
    let (code, job) = roles(
        "chief=1,worker=1,ps=1",
        &[],
        "*=fail:ValueError: bad batch 7",
    );
    assert_eq!(code, Some(1), "{}", job.stderr());
    assert_eq!(starts(&job), ["0", "1"], "stopped after one restart");
    let stderr = job.stderr();
    assert!(
        stderr.contains(
            "(a crash loop: \"exited with status 3: ValueError: bad batch N\" twice in a row on "
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-crash-loops goes on"), "{stderr}");
    // Allowed, it runs to the bound instead.
    let (code, job) = roles(
        "chief=1,worker=1,ps=1",
        &["--allow-crash-loops", "--max-task-restarts", "2"],
        "*=fail:ValueError: bad batch 7",
    );
    assert_eq!(code, Some(1), "{}", job.stderr());
    assert_eq!(starts(&job), ["0", "1", "2"]);
}

#[test]
fn the_evaluator_restarts_alone_under_mirrored_strategy() {
    // No ps: MultiWorkerMirroredStrategy. The worker waits for the evaluator to serve again.
    let (code, job) = roles(
        "chief=1,evaluator=1",
        &[],
        "0=fail:OSError: no checkpoint,*=serve",
    );
    assert_eq!(code, Some(0), "{}", job.stderr());
    assert_eq!(starts(&job), ["0", "1"], "{}", job.stdout());
    // A worker's failure there stops the job, as before.
    let (code, job) = roles("chief=1,worker=1", &[], "*=fail:OSError: x");
    assert_eq!(code, Some(1), "{}", job.stderr());
    assert_eq!(starts(&job), ["0"]);
}
