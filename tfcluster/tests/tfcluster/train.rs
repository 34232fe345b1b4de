//! Real distributed training with TensorFlow 2.21 under `tfcluster run --local`: the two
//! scripts in `tests/scripts/` (MultiWorkerMirroredStrategy with a custom loop,
//! ParameterServerStrategy with a ClusterCoordinator) train to completion, TensorFlow agrees
//! with the TF_CONFIG each task got, and every task saw the same cluster.
//!
//! These need TensorFlow's python (`tf_oracle::python()`); without it they fail, saying how to
//! get it.

use std::time::{Duration, Instant};

use super::launch::Launch;

/// Importing TensorFlow in four processes on a loaded two-core machine takes a while.
const TIMEOUT: Duration = Duration::from_secs(300);

/// `tfcluster run --local JOBS --grace GRACE -- python SCRIPT`, waited for; returns the job's
/// stdout.
fn train(jobs: &str, grace: &str, script: &str) -> String {
    let [python, script] = super::tf_script(script);
    let started = Instant::now();
    let mut job = Launch::start(
        &[
            "run", "--local", jobs, "--grace", grace, "--", &python, &script,
        ],
        &[],
    );
    let status = job.wait(TIMEOUT);
    if !status.success() {
        job.fail(&format!("training failed: {status}"));
    }
    eprintln!("{jobs} {script} took {:.1?}", started.elapsed());
    job.stdout()
}

/// The `cluster DIGEST` line of each task, checked equal, and their number.
fn same_cluster(stdout: &str, tasks: usize) {
    let digests: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once("] cluster ").map(|(_, digest)| digest))
        .collect();
    assert_eq!(digests.len(), tasks, "{stdout}");
    assert!(digests.iter().all(|d| *d == digests[0]), "{stdout}");
}

#[test]
fn multi_worker_mirrored_custom_loop_trains() {
    let stdout = train("worker=2", "10s", "mwms_train.py");
    same_cluster(&stdout, 2);
    for task in ["worker:0", "worker:1"] {
        assert!(
            stdout.contains(&format!("[{task}] mwms ok {task} replicas=2 steps=30")),
            "{stdout}"
        );
    }
}

#[test]
fn parameter_server_strategy_trains_on_through_a_worker_killed_and_restarted_in_place() {
    // The workers and the ps serve until stopped: a short grace after the chief's success.
    let [python, script] = super::tf_script("pss_train.py");
    let dir = super::scratch("pss-local");
    let ckpt = dir.path().to_str().expect("a UTF-8 path");
    let mut job = Launch::start(
        &[
            "run",
            "--local",
            "chief=1,worker=2,ps=1",
            "--grace",
            "2s",
            "--",
            &python,
            &script,
        ],
        &[("PSS_PAUSE", "1"), ("CKPT_DIR", ckpt)],
    );
    job.lines_with("] pss half", 1, TIMEOUT);
    let pid_of = |task: &str| -> i32 {
        let prefix = format!("[{task}] pid ");
        let stdout = job.stdout();
        let line = stdout.lines().find(|l| l.starts_with(&prefix));
        let pid = line.unwrap_or_else(|| job.fail(&format!("no pid line of {task}")));
        pid[prefix.len()..].trim().parse().expect("a pid")
    };
    let chief = pid_of("chief:0");
    let victim = nix::unistd::Pid::from_raw(pid_of("worker:1"));
    nix::sys::signal::kill(victim, nix::sys::signal::Signal::SIGKILL).expect("the worker runs");
    job.lines_with("[worker:1] restart count 1", 1, TIMEOUT);
    std::fs::write(dir.path().join("go"), "").expect("the go file");
    let status = job.wait(TIMEOUT);
    if !status.success() {
        job.fail(&format!("training failed: {status}"));
    }
    let stdout = job.stdout();
    same_cluster(&stdout, 5);
    let ok = "[chief:0] pss ok chief:0 workers=2 ps=1 replicas=1 steps=40 executed=";
    let line = stdout.lines().find(|l| l.starts_with(ok));
    let line = line.unwrap_or_else(|| job.fail("the chief did not finish"));
    assert!(
        line.contains(&format!(" pid={chief} ")),
        "the same chief: {line}"
    );
    // Each task started once with restart count 0, and worker 1 once more, in place, with 1.
    let mut restarts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("] restart count "))
        .collect();
    restarts.sort_unstable();
    assert_eq!(
        restarts,
        [
            "[chief:0] restart count 0",
            "[ps:0] restart count 0",
            "[worker:0] restart count 0",
            "[worker:1] restart count 0",
            "[worker:1] restart count 1",
        ],
        "{stdout}"
    );
    for task in ["worker:0", "worker:1", "ps:0"] {
        assert!(
            stdout.contains(&format!("[{task}] serving {task}")),
            "{stdout}"
        );
    }
}
