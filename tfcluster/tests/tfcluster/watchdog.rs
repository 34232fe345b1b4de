//! `tfcluster run --local --watchdog`: a task with no progress is found hung, asked for its
//! Python stack and killed, and the job fails naming it; output and touches of its progress
//! file are progress, so busy or quietly beating tasks live on; a SIGSTOPped task is hung.
//! `run --rdzv --watchdog` with real TensorFlow is in `elastic_run.rs`.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::launch::{Launch, assert_all_gone};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The watchdog's period here: far above a Python start without TensorFlow, even on a busy
/// machine, and far below the tests' patience.
const WATCHDOG: &str = "2s";

/// A task that reads its name from TF_CONFIG, prints `pid NAME PID`, and acts on the plan in
/// `sys.argv[1]` (`worker:0=stuck,*=chatty`): `stuck` sleeps, quiet, inside `stuck()`;
/// `chatty` prints a line every 0.2 s inside `work()`, for ever; `print` does so for 5 s and
/// exits 0; `touch` touches its `$TFCLUSTER_PROGRESS_FILE` every 0.2 s for 5 s, printing
/// nothing, and exits 0 (as `tfcluster.progress()` does; pytest tests that helper).
const TASK: &str = r#"
import json, os, sys, time
task = json.loads(os.environ["TF_CONFIG"])["task"]
name = f'{task["type"]}:{task["index"]}'
plan = dict(part.split("=") for part in sys.argv[1].split(","))
action = plan.get(name, plan.get("*"))
print(f"pid {name} {os.getpid()}", flush=True)
def stuck():
    time.sleep(1e9)
def work(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        print(f"step {name}", flush=True)
        time.sleep(0.2)
def touch(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        os.utime(os.environ["TFCLUSTER_PROGRESS_FILE"])
        time.sleep(0.2)
if action == "stuck":
    stuck()
elif action == "chatty":
    work(1e9)
elif action == "print":
    work(5)
elif action == "touch":
    touch(5)
"#;

/// `tfcluster run --local JOBS --grace 2s --watchdog 2s --watchdog-start 0s -- python -c
/// TASK PLAN`.
fn watched_job(jobs: &str, plan: &str) -> Launch {
    let python = tf_oracle::python();
    let python = python.to_str().expect("a UTF-8 path");
    Launch::start(
        &[
            "run",
            "--local",
            jobs,
            "--grace",
            "2s",
            "--watchdog",
            WATCHDOG,
            "--watchdog-start",
            "0s",
            "--",
            python,
            "-c",
            TASK,
            plan,
        ],
        &[],
    )
}

/// The pid each task printed, in the order printed.
fn pids(job: &Launch, tasks: usize) -> Vec<u32> {
    job.lines_with(" pid ", tasks, TIMEOUT)
        .iter()
        .map(|line| line.rsplit(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// Asserts that `job` failed naming `task` hung, with the frame of the script's function
/// `frame` (faulthandler's `line N in FRAME`) in the message, and nothing else hung.
fn assert_hung(job: &mut Launch, task: &str, frame: &str) {
    assert_eq!(job.wait(TIMEOUT).code(), Some(1), "{}", job.stderr());
    let stderr = job.stderr();
    let named = format!(
        "task {task} (/job:worker/replica:0/task:{}) hung: no progress for {WATCHDOG}; the \
         other tasks were stopped; its stderr ended with:\n",
        &task[task.len() - 1..]
    );
    let (_, stack) = stderr
        .split_once(&named)
        .unwrap_or_else(|| panic!("no {named:?} in:\n{stderr}"));
    assert!(
        stack.contains("most recent call first") && stack.contains(&format!(" in {frame}\n")),
        "no frame of {frame} in the stack:\n{stack}"
    );
    // One hung task, one report.
    assert_eq!(stderr.matches("hung: no progress").count(), 1, "{stderr}");
}

#[test]
fn a_task_stuck_in_a_function_is_hung_and_its_stack_names_the_function() {
    let mut job = watched_job("worker=2", "worker:0=stuck,*=chatty");
    let pids = pids(&job, 2);
    assert_hung(&mut job, "worker:0", "stuck");
    // Found after the period, not at an order of magnitude more (the chatty task's steps
    // were progress all along).
    assert!(
        job.ran_for() < Duration::from_secs(20),
        "{:?}",
        job.ran_for()
    );
    assert_all_gone(&pids);
}

#[test]
fn output_and_touches_of_the_progress_file_keep_quiet_tasks_alive() {
    // Both run for 5 s, more than twice the period: the one that prints and the one that
    // only touches its file.
    let mut job = watched_job("worker=2", "worker:0=print,worker:1=touch");
    assert_eq!(job.wait(TIMEOUT).code(), Some(0), "{}", job.stderr());
    assert!(!job.stderr().contains("hung"), "{}", job.stderr());
    assert!(job.ran_for() >= Duration::from_secs(5));
}

#[test]
fn a_stopped_task_is_hung_and_continued_to_print_its_stack() {
    let mut job = watched_job("worker=1", "*=chatty");
    let pids = pids(&job, 1);
    job.lines_with(" step ", 3, TIMEOUT);
    kill(Pid::from_raw(pids[0] as i32), Signal::SIGSTOP).expect("the task runs");
    assert_hung(&mut job, "worker:0", "work");
    assert_all_gone(&pids);
}

#[test]
fn a_task_quiet_in_its_start_period_is_not_judged() {
    // Quiet for 3 s from its start, far past the 1 s watchdog, but within its start period.
    let python = tf_oracle::python();
    let quiet = "import time\ntime.sleep(3)\nprint('started', flush=True)\n";
    let mut job = Launch::start(
        &[
            "run",
            "--local",
            "worker=1",
            "--watchdog",
            "1s",
            "--watchdog-start",
            "8s",
            "--",
            python.to_str().expect("a UTF-8 path"),
            "-c",
            quiet,
        ],
        &[],
    );
    assert_eq!(job.wait(TIMEOUT).code(), Some(0), "{}", job.stderr());
    assert!(
        job.stdout().contains("[worker:0] started"),
        "{}",
        job.stdout()
    );
}
