//! `tfcluster run --rdzv` across hosts: one agent per host, each host a network namespace
//! ([`net_hosts`]), real TensorFlow 2.21 training with MultiWorkerMirroredStrategy
//! (`scripts/elastic_train.py`, which checkpoints to a directory every host shares) or
//! ParameterServerStrategy (`scripts/pss_train.py`). Host 0's agent serves the rendezvous on
//! its address and the default port. The failures are real: a task SIGKILLed, a host's link
//! set down, a host added, a script that always fails.
//!
//! The jobs ([`Job`]) run one at a time, and leave no process or namespace behind.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::host_job::{JOB_TIMEOUT, Job, done, job_address};

/// Every agent starts its tasks again within this long of a failure: the grace is 5 s and a
/// quiet run restarts six cold TensorFlow tasks in about 10 s; a loaded two-core machine
/// may take several times that, which is slow, not wrong.
const RESTART_WITHIN: Duration = Duration::from_secs(120);

/// The flags most jobs here share: `--tasks-per-node 2` (a host's agent stops and restarts
/// its other task with the failed one), started [`cold`].
fn flags<'a>(nodes: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    cold(nodes, "2", more)
}

/// [`flags`] with TensorFlow imported ahead in spare interpreters, as by default.
fn warm<'a>(nodes: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    common(nodes, "2", more)
}

/// [`flags`] with one task per host, for the tests of what hosts do (one lost, one joining,
/// one task stopped): half the TensorFlow processes of two per host, each a few CPU-seconds
/// to start and all of them in each all-reduce, for the same failure seen by the same agents.
fn one_per_host<'a>(nodes: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    cold(nodes, "1", more)
}

/// [`common`]'s flags and `--no-prewarm`: a spare interpreter imports TensorFlow for each
/// task, six CPU-seconds each, which doubles a job's imports on two cores. The tests that
/// warm starts are part of use [`warm`]; prewarm.rs tests them on one host.
fn cold<'a>(nodes: &'a str, per_node: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [&common(nodes, per_node, more)[..], &["--no-prewarm"]].concat()
}

/// `--nodes nodes --tasks-per-node per_node`, a short last call and grace, and an
/// [`unhurried`](super::unhurried) rendezvous timeout unless `more` gives one.
fn common<'a>(nodes: &'a str, per_node: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let common = [
        "--nodes",
        nodes,
        "--tasks-per-node",
        per_node,
        "--rdzv-last-call",
        "2s",
        "--grace",
        "5s",
    ];
    super::unhurried(&[&common[..], more].concat())
}

#[test]
fn mirrored_training_on_three_hosts_sees_one_cluster_of_six() {
    let env = [
        ("EXPECT_RESTART_COUNT", "0"),
        ("EXPECT_WORKERS", "6"),
        ("STEP_SECONDS", "0"),
    ];
    let mut job = Job::training("mwms", 3, &flags("3", &[]), &env);
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 0);
    let clusters = job.lines("cluster");
    assert_eq!(clusters.len(), 6, "{clusters:?}");
    let digest = clusters[0].1.split_whitespace().next().unwrap().to_owned();
    let mut hosts_seen = std::collections::BTreeSet::new();
    for (task, rest) in &clusters {
        assert!(
            rest.starts_with(&format!("{digest} workers=6 round=1 restarts=0")),
            "{task}: {rest}"
        );
        hosts_seen.insert(task.split('/').next().unwrap().to_owned());
    }
    let expected: std::collections::BTreeSet<String> =
        (0..3).map(|h| job.hosts().address(h).to_string()).collect();
    assert_eq!(hosts_seen, expected, "two tasks on each host");
    assert_eq!(done(&job).len(), 6, "{}", job.stdout());
    job.assert_nothing_left();
}

#[test]
fn a_task_killed_mid_training_restarts_every_host_from_the_last_checkpoint() {
    let env = [("EXPECT_RESTART_COUNT", "1"), ("EXPECT_WORKERS", "6")];
    // Cold starts ([`flags`]): the restart is timed by the `pid` line a task prints before
    // its import, which a warm interpreter prints only after its import. Warm restarts are
    // tested in prewarm.rs and timed by the benchmark.
    let mut job = Job::training("kill", 3, &flags("3", &[]), &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    let victim = job.pid_of("worker:3");
    let killed = Instant::now();
    kill(victim, Signal::SIGKILL).expect("the task runs");
    // Every task of the next round started (its `pid` line, printed before TensorFlow's
    // import): six of round 1, six of round 2.
    job.wait_for("every task started again", RESTART_WITHIN, |job| {
        job.lines("pid").len() >= 12
    });
    let restarted_in = killed.elapsed();
    job.expect_exits(&[0, 1, 2], 0);
    let done = done(&job);
    assert_eq!(done.len(), 6, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (6, 2, 1), "{task}");
        assert!(*restored >= 10, "{task} restored step {restored}");
    }
    eprintln!(
        "a task killed: every task started again in {restarted_in:?}\n{}",
        job.stderr()
    );
    job.assert_nothing_left();
}

/// A `--nodes 2:3` job of three hosts, a task each, with a 5 s `--rdzv-timeout`, training
/// past its first checkpoint: host 2 is the one to lose.
fn three_hosts_training(name: &str) -> Job {
    let env = [("EXPECT_RESTART_COUNT", "1")];
    let flags = one_per_host("2:3", &["--rdzv-timeout", "5s"]);
    let mut job = Job::training(name, 3, &flags, &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    job
}

/// Hosts 0 and 1 finished the job without host 2: 2 tasks, in a later round, restart count 1,
/// from a checkpoint.
fn assert_finished_without_host_2(job: &mut Job) {
    job.expect_exits(&[0, 1], 0);
    let done = done(job);
    assert_eq!(done.len(), 2, "{}", job.stdout());
    let lost = format!("{}/", job.hosts().address(2));
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *restarts), (2, 1), "{task}");
        assert!(
            *round >= 2 && *restored >= 10,
            "{task}: round {round}, restored {restored}"
        );
        assert!(
            !task.starts_with(&lost),
            "the lost host took no part: {task}"
        );
    }
}

#[test]
fn a_host_lost_mid_training_leaves_two_that_finish_alone() {
    let mut job = three_hosts_training("lost");
    // Host 2 vanishes from the network: its packets are dropped, nothing answers for it.
    job.hosts().link(2, false);
    assert_finished_without_host_2(&mut job);
    // The lost host's agent, cut off from the rendezvous, stops its tasks and gives up.
    job.expect_exits(&[2], 1);
    let stderr = job.agent(2).stderr();
    assert!(stderr.contains("rendezvous at "), "{stderr}");
    job.assert_nothing_left();
}

#[test]
fn a_host_whose_agent_and_tasks_are_killed_is_lost_and_the_others_finish() {
    // A host that crashes: its agent and every task it ran die at once, nobody leaves.
    let mut job = three_hosts_training("crash");
    let host = format!("{}/", job.hosts().address(2));
    let tasks: Vec<Pid> = job
        .lines("pid")
        .into_iter()
        .filter(|(task, _)| task.starts_with(&host))
        .map(|(_, pid)| Pid::from_raw(pid.trim().parse().expect("a pid")))
        .collect();
    assert_eq!(tasks.len(), 1, "host 2 runs one task");
    job.agent(2).signal(Signal::SIGKILL);
    for task in tasks {
        kill(task, Signal::SIGKILL).expect("the task runs");
    }
    assert_finished_without_host_2(&mut job);
    job.expect_exits(&[2], -1);
    job.assert_nothing_left();
}

#[test]
fn a_task_stopped_mid_training_ends_the_round_and_every_host_restarts() {
    // SIGSTOP: the task is alive and silent, its peers wait in the all-reduce. Whichever
    // notices first ends the round: the watchdog (every worker prints each step; judged
    // after its start period) or TensorFlow's coordination service (the stopped task sends
    // no heartbeats: its peers fail about 10 s later). The round after runs every task.
    let env = [
        ("EXPECT_RESTART_COUNT", "1"),
        ("EXPECT_WORKERS", "3"),
        ("PRINT_STEPS", "1"),
    ];
    let flags = one_per_host("3", &["--watchdog", "5s"]);
    let mut job = Job::training("stop", 3, &flags, &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    let victim = job.pid_of("worker:2");
    kill(victim, Signal::SIGSTOP).expect("the task runs");
    job.expect_exits(&[0, 1, 2], 0);
    let done = done(&job);
    assert_eq!(done.len(), 3, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (3, 2, 1), "{task}");
        assert!(*restored >= 10, "{task} restored step {restored}");
    }
    job.assert_nothing_left();
}

#[test]
fn a_fourth_host_joining_mid_training_makes_the_next_round_four_tasks() {
    // A host joining is no failure: the restart count stays 0 (torchrun's rule too).
    let env = [("EXPECT_RESTART_COUNT", "0")];
    let mut job = Job::training("grow", 4, &one_per_host("2:4", &[]), &env);
    job.start_all(3);
    job.wait_for_a_checkpoint();
    job.start(3);
    job.expect_exits(&[0, 1, 2, 3], 0);
    let done = done(&job);
    assert_eq!(done.len(), 4, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (4, 2, 0), "{task}");
        assert!(*restored >= 10, "{task} restored step {restored}");
    }
    job.assert_nothing_left();
}

#[test]
fn a_host_joining_lets_preemption_checkpoint_handler_save_and_the_next_round_resume_there() {
    // The script checkpoints only through TensorFlow's PreemptionCheckpointHandler: a round
    // that restores a step other than 0 resumes from what the handler saved when the join
    // stopped the tasks cleanly (SIGTERM, then --grace).
    let script = super::tf_script("preemption_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let mut job = Job::new("preempt", 3, &warm("2:3", &[]), &command, &[]);
    job.start_all(2);
    job.wait_for("training in round 1", JOB_TIMEOUT, |job| {
        job.lines("step").len() >= 4 * 3
    });
    job.start(2);
    job.expect_exits(&[0, 1, 2], 0);
    let saved: Vec<(String, String)> = job.lines("preempted");
    assert_eq!(
        saved.len(),
        4,
        "every task of round 1 saved:\n{}",
        job.stdout()
    );
    let step = saved[0].1.clone();
    assert!(
        saved
            .iter()
            .all(|(_, rest)| *rest == step && rest.ends_with(" round=1")),
        "one step on every worker: {saved:?}"
    );
    let step: u64 = step.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(step > 0, "saved at step {step}");
    let done = done(&job);
    assert_eq!(done.len(), 6, "{}", job.stdout());
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (6, 2, 0), "{task}");
        assert_eq!(*restored, step, "{task} resumed from the handler's step");
    }
    // Every task of both rounds ran in a warm interpreter: TensorFlow was imported before
    // the script started (prewarm is on by default for a python command).
    let starts = job.lines("start");
    assert_eq!(starts.len(), 10, "{starts:?}");
    for (task, rest) in &starts {
        assert!(
            rest.starts_with("preloaded=1 "),
            "{task} started cold: {rest}"
        );
    }
    job.assert_nothing_left();
}

#[test]
fn an_evaluator_killed_restarts_alone_while_mirrored_training_runs_on() {
    // TensorFlow's side-car evaluator is outside MultiWorkerMirroredStrategy's cluster: its
    // death restarts it alone, and no training task stops (each prints its pid once).
    let env = [("STEP_SECONDS", "0.2"), ("EXPECT_RESTART_COUNT", "0")];
    let mut job = Job::training(
        "evaluator",
        2,
        &flags("2", &["--layout", "evaluator=1"]),
        &env,
    );
    job.start_all(2);
    job.wait_for("an evaluation", JOB_TIMEOUT, |job| {
        !job.lines("evaluated").is_empty()
    });
    kill(job.pid_of("evaluator:0"), Signal::SIGKILL).expect("the evaluator runs");
    job.wait_for("the evaluator again", RESTART_WITHIN, |job| {
        job.lines("evaluator").len() == 2
    });
    job.expect_exits(&[0, 1], 0);
    let stdout = job.stdout();
    let evaluator: Vec<String> = job.lines("evaluator").into_iter().map(|(_, r)| r).collect();
    assert_eq!(evaluator, ["restarts=0", "restarts=1"], "{stdout}");
    let done = done(&job);
    assert_eq!(done.len(), 3, "{stdout}");
    for (task, workers, round, restarts, _) in &done {
        assert_eq!((*workers, *round, *restarts), (3, 1, 0), "{task}");
    }
    let pids = job.lines("pid");
    assert_eq!(
        pids.len(),
        5,
        "three training tasks once, the evaluator twice: {pids:?}"
    );
    job.assert_nothing_left();
}

#[test]
fn a_preemption_notice_to_one_task_is_a_planned_restart_that_costs_no_restart() {
    // SIGTERM to one worker, as a spot VM's notice: TensorFlow's PreemptionCheckpointHandler
    // saves at one step on every worker, which exit 42. With --max-restarts 0, a counted
    // failure would end the job; the planned one restarts it, which resumes there.
    let script = super::tf_script("preemption_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let mut job = Job::new(
        "preempt-42",
        2,
        &flags("2", &["--max-restarts", "0"]),
        &command,
        &[],
    );
    job.start_all(2);
    job.wait_for("training in round 1", JOB_TIMEOUT, |job| {
        job.lines("step").len() >= 4 * 3
    });
    kill(job.pid_of("worker:1"), Signal::SIGTERM).expect("the worker runs");
    job.expect_exits(&[0, 1], 0);
    saved_once_and_resumed(&job, 4, 4);
    job.assert_nothing_left();
}

/// `preemption_train.py`'s story of a notice in round 1: each of `saved` tasks saved at the
/// same step (TensorFlow's handler), and the `finished` tasks of round 2 restored that step,
/// with no restart counted.
fn saved_once_and_resumed(job: &Job, saved: usize, finished: u64) {
    let stdout = job.stdout();
    let lines: Vec<(String, String)> = job.lines("preempted");
    assert_eq!(lines.len(), saved, "every task saved:\n{stdout}");
    let step = &lines[0].1;
    assert!(
        lines
            .iter()
            .all(|(_, rest)| rest == step && rest.ends_with(" round=1")),
        "one step on every worker: {lines:?}"
    );
    let step: u64 = step.split_whitespace().nth(1).unwrap().parse().unwrap();
    let done = done(job);
    assert_eq!(done.len() as u64, finished, "{stdout}");
    for (task, workers, round, restarts, restored) in &done {
        assert_eq!((*workers, *round, *restarts), (finished, 2, 0), "{task}");
        assert_eq!(*restored, step, "{task} resumed from the handler's step");
    }
}

#[test]
fn a_spot_notice_on_one_host_saves_at_one_step_and_the_job_trains_on_without_it() {
    // Each host its own VM: host 2's metadata server stands in on host 2's loopback and
    // gives the notice; hosts 0 and 1 have none there (their watchers cannot reach theirs,
    // say so, and the job runs on). With --max-restarts 0, a counted restart would end it.
    let script = super::tf_script("preemption_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let flags = one_per_host(
        "2:3",
        &["--max-restarts", "0", "--preemption-notices", "gce"],
    );
    let mut job = Job::new("notice", 3, &flags, &command, &[]);
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let metadata = job
        .hosts()
        .in_host(2, || rt.block_on(http_standin::GceMetadata::start()));
    let nowhere = ("GCE_METADATA_HOST", "127.0.0.1:1");
    job.start_with(0, &[nowhere]);
    std::thread::sleep(Duration::from_millis(300));
    job.start_with(1, &[nowhere]);
    job.start_with(2, &[("GCE_METADATA_HOST", metadata.host())]);
    job.wait_for("training in round 1", JOB_TIMEOUT, |job| {
        job.lines("step").len() >= 3 * 3
    });
    let noticed = Instant::now();
    metadata.set("instance/preempted", "TRUE");
    job.wait_for("training without host 2", JOB_TIMEOUT, |job| {
        job.lines("restored")
            .iter()
            .any(|(_, rest)| rest.ends_with(" round=2"))
    });
    let without = noticed.elapsed();
    job.expect_exits(&[0, 1, 2], 0);
    let stderr = job.stderr();
    assert!(
        stderr.contains(
            "left the job ahead of the cloud's notice: gce preemption (instance/preempted: TRUE)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot read the cloud's notices; the job runs on"),
        "{stderr}"
    );
    // Three saved; the two hosts left finish from that step: nothing redone.
    saved_once_and_resumed(&job, 3, 2);
    eprintln!("a spot notice: training again without its host {without:?} after it");
    job.assert_nothing_left();
    rt.block_on(metadata.stop());
}

#[test]
fn a_script_that_always_fails_is_a_crash_loop_stopped_after_one_restart() {
    // Fails a second after its start (so that every task of the round has started before
    // the first failure stops the others), saying why on stderr: no TensorFlow needed. The
    // same failure in round 2 is a crash loop: the job stops there, not after 5 restarts.
    let command = [
        "sh",
        "-c",
        "echo start $TFCLUSTER_ROUND; sleep 1; \
         echo \"no data for task $TFCLUSTER_LOCAL_TASK\" >&2; exit 7",
    ];
    let mut job = Job::new(
        "fail",
        3,
        &flags("3", &["--max-restarts", "5"]),
        &command,
        &[],
    );
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 1);
    let crash_loop = "a crash loop: \"exited with status 7: no data for task N\" ";
    let mut starts: Vec<String> = job.lines("start").into_iter().map(|(_, r)| r).collect();
    starts.sort();
    assert_eq!(
        starts,
        [["1"; 6], ["2"; 6]].concat(),
        "two attempts of six tasks:\n{}",
        job.stdout()
    );
    for h in 0..3 {
        let stderr = job.agent(h).stderr();
        assert!(
            stderr.contains("the job failed in round 2"),
            "host {h}: {stderr}"
        );
        assert!(stderr.contains(crash_loop), "host {h}: {stderr}");
        assert!(
            stderr.contains("first failure: task "),
            "host {h}: {stderr}"
        );
        assert!(
            stderr.contains(") exited with status 7 in round 1"),
            "host {h}: {stderr}"
        );
        assert!(
            stderr.contains("on 192.0.2.1"),
            "the host is named: {stderr}"
        );
        assert!(
            stderr.contains("its stderr ended with:\nno data for task "),
            "host {h}: {stderr}"
        );
        let record = std::fs::read_to_string(job.error_file(h)).expect("the error file");
        let record: serde_json::Value = serde_json::from_str(&record).expect("JSON");
        assert_eq!(record["first_failure"]["status"], "exited with status 7");
        assert_eq!(record["first_failure"]["round"], 1);
    }
    job.assert_nothing_left();
}

#[test]
fn parameter_server_training_on_three_hosts_survives_a_worker_killed_in_place() {
    let script = super::tf_script("pss_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let mut job = Job::new(
        "pss",
        3,
        // The worker restarts in place in a warm interpreter, as users' jobs do.
        &warm("3", &["--layout", "chief=1,ps=1"]),
        &command,
        &[("PSS_PAUSE", "1")],
    );
    job.start_all(3);
    job.wait_for("half the steps", JOB_TIMEOUT, |job| {
        job.stdout().contains("/chief:0] pss half")
    });
    // The chief (the coordinator) and the ps run on host 0, the workers on hosts 1 and 2.
    let chief = job.pid_of("chief:0");
    let victim = job.pid_of("worker:3");
    let killed = Instant::now();
    kill(victim, Signal::SIGKILL).expect("the worker runs");
    job.wait_for("the worker started again", RESTART_WITHIN, |job| {
        job.lines("restart count").len() >= 7
    });
    let restarted_in = killed.elapsed();
    std::fs::write(job.shared_dir().join("go"), "").expect("the go file");
    job.expect_exits(&[0, 1, 2], 0);
    let stdout = job.stdout();
    let host = |h| job.hosts().address(h).to_string();
    let ok = format!("[{}/chief:0] pss ok chief:0 workers=4 ps=1", host(0));
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&ok))
        .unwrap_or_else(|| panic!("no {ok}:\n{stdout}"));
    // The coordinator's process ran throughout, and every step was done.
    assert!(line.contains(&format!(" pid={chief} ")), "{line}");
    assert!(line.contains(" steps=40 executed="), "{line}");
    let restarts: Vec<(String, String)> = job.lines("restart count");
    let of = |task: &str| -> Vec<&str> {
        restarts
            .iter()
            .filter(|(t, _)| t.ends_with(task))
            .map(|(_, r)| r.as_str())
            .collect()
    };
    assert_eq!(
        of("/worker:3"),
        ["0", "1"],
        "worker 3 restarted once, in place"
    );
    assert_eq!(of("/chief:0"), ["0"], "the chief ran once");
    assert_eq!(restarts.len(), 7, "one restart of six tasks: {restarts:?}");
    let digests: std::collections::BTreeSet<String> = job
        .lines("cluster")
        .into_iter()
        .map(|(_, digest)| digest)
        .collect();
    assert_eq!(digests.len(), 1, "every task saw one cluster:\n{stdout}");
    let stderr = job.stderr();
    assert!(stderr.contains("restarting the task in place"), "{stderr}");
    eprintln!("a worker killed: started again in place in {restarted_in:?}");
    job.assert_nothing_left();
}

#[test]
fn a_parameter_server_killed_restarts_with_the_chief_on_another_host_which_restores_its_checkpoint()
{
    let script = super::tf_script("pss_train.py");
    let command: Vec<&str> = script.iter().map(String::as_str).collect();
    let mut job = Job::new(
        "pss-ps",
        3,
        // Warm: started cold, the restarted chief can reach for ps:1 before ps:1 serves
        // again, fail, and restart once more (its restart 2, a failure of its own), which
        // would make the counts below a race. The numbering is the registry's unit tests'.
        &warm("3", &["--layout", "chief=1,ps=2"]),
        &command,
        &[("PSS_PAUSE", "1"), ("PSS_CHECKPOINT", "1")],
    );
    job.start_all(3);
    job.wait_for("half the steps, checkpointed", JOB_TIMEOUT, |job| {
        job.stdout().contains("/chief:0] pss half")
    });
    // chief:0 and ps:0 run on one host, ps:1 on another: its death asks the chief's.
    let host_of = |task: &str| {
        let (name, _) = job
            .lines("pid")
            .into_iter()
            .find(|(t, _)| t.ends_with(&format!("/{task}")))
            .unwrap_or_else(|| panic!("no {task}"));
        name.split('/').next().unwrap().to_owned()
    };
    assert_ne!(host_of("chief:0"), host_of("ps:1"));
    let chief = job.pid_of("chief:0");
    kill(job.pid_of("ps:1"), Signal::SIGKILL).expect("the parameter server runs");
    job.wait_for("the chief restored", RESTART_WITHIN, |job| {
        job.stdout().contains("/chief:0] pss restored executed=")
    });
    std::fs::write(job.shared_dir().join("go"), "").expect("the go file");
    job.expect_exits(&[0, 1, 2], 0);
    let stdout = job.stdout();
    let restored: Vec<(String, String)> = job.lines("pss restored");
    assert_eq!(restored.len(), 1, "{stdout}");
    let executed: u64 = restored[0]
        .1
        .trim_start_matches("executed=")
        .parse()
        .unwrap();
    assert!(
        executed >= 20,
        "the checkpoint holds the first half: {executed}"
    );
    let ok = stdout
        .lines()
        .find(|l| l.contains("/chief:0] pss ok chief:0 workers=3 ps=2"))
        .unwrap_or_else(|| panic!("no pss ok:\n{stdout}"));
    // A new coordinator finished the second half on the restored variables.
    assert!(!ok.contains(&format!(" pid={chief} ")), "{ok}");
    assert!(ok.contains(" steps=40 executed="), "{ok}");
    let restarts = job.lines("restart count");
    let of = |task: &str| -> Vec<&str> {
        restarts
            .iter()
            .filter(|(t, _)| t.ends_with(task))
            .map(|(_, r)| r.as_str())
            .collect()
    };
    let stderr = job.stderr();
    assert_eq!(of("/ps:1"), ["0", "1"], "ps:1 restarted in place");
    assert_eq!(
        of("/chief:0"),
        ["0", "1"],
        "the chief restarted with it:\n{stdout}\n{stderr}"
    );
    assert_eq!(restarts.len(), 8, "no other task restarted: {restarts:?}");
    assert!(
        stderr.contains("a parameter server failed: restarting the chief too"),
        "{stderr}"
    );
    job.assert_nothing_left();
}

/// A task that SIGKILLs itself a second after its start on the host whose address is
/// `$BAD_HOST` (no crash-loop signature: a kill from outside, as an OOM killer's), and
/// elsewhere exits 0 in round 3 or later (every worker ends: the job succeeds) or serves.
const FLAKY_HOST: &str = r#"
echo "start $TFCLUSTER_ROUND"
if ip -4 -o addr show | grep -q " $BAD_HOST/"; then sleep 1; kill -9 $$; fi
if [ "$TFCLUSTER_ROUND" -ge 3 ]; then exit 0; fi
exec sleep 1000
"#;

#[test]
fn a_host_whose_tasks_keep_failing_is_set_aside_and_the_job_finishes_on_the_others() {
    let bad = job_address(2).to_string();
    let mut job = Job::new(
        "set-aside",
        3,
        &flags("2:3", &["--bad-host-failures", "2", "--max-restarts", "5"]),
        &["sh", "-c", FLAKY_HOST],
        &[("BAD_HOST", &bad)],
    );
    assert_eq!(job.hosts().address(2).to_string(), bad);
    job.start_all(3);
    job.expect_exits(&[0, 1, 2], 0);
    let starts: Vec<(String, String)> = job.lines("start");
    // Rounds 1 and 2 on three hosts, round 3 on the two others.
    let in_round = |r: &str| {
        let mut hosts: Vec<String> = starts
            .iter()
            .filter(|(_, round)| round == r)
            .map(|(task, _)| task.split('/').next().unwrap().to_owned())
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    };
    let all: Vec<String> = (0..3).map(|h| job.hosts().address(h).to_string()).collect();
    assert_eq!(in_round("1"), all, "{starts:?}");
    assert_eq!(in_round("2"), all, "{starts:?}");
    assert_eq!(in_round("3"), all[..2], "{starts:?}");
    let stderr = job.stderr();
    // The rendezvous (host 0's agent serves it) logs it with the reason.
    assert!(
        stderr.contains(&format!(
            "a host is set aside rdzv_id=default host=\"{bad}\""
        )) && stderr.contains("its tasks failed 2 times within 600.0 s while no other host's did"),
        "{stderr}"
    );
    job.assert_nothing_left();
}

#[test]
fn a_host_failing_its_health_check_stays_out_and_the_job_runs_without_it() {
    let bad = job_address(2);
    let check = format!("! ip -4 -o addr show | grep -q ' {bad}/'");
    let command = ["sh", "-c", "echo start $TFCLUSTER_ROUND; sleep 1"];
    let mut job = Job::new(
        "health",
        3,
        &flags("2:3", &["--health-check", &check, "--join-timeout", "12s"]),
        &command,
        &[],
    );
    job.start_all(3);
    // Hosts 0 and 1 run the job and succeed; host 2 never joined, and gives up at its join
    // timeout, saying why.
    job.expect_exits(&[0, 1], 0);
    job.expect_exits(&[2], 1);
    let hosts: Vec<String> = job.lines("start").into_iter().map(|(t, _)| t).collect();
    assert_eq!(hosts.len(), 4, "two tasks on each of two hosts: {hosts:?}");
    assert!(
        hosts.iter().all(|t| !t.starts_with(&format!("{bad}/"))),
        "{hosts:?}"
    );
    let stderr = job.agent(2).stderr();
    assert!(
        stderr.contains("the host failed its health check: it does not join until it passes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the host failed its health check for ")
            && stderr.contains(&format!("health check `{check}` exited with status 1")),
        "{stderr}"
    );
    job.assert_nothing_left();
}
