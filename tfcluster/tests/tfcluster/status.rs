//! `tfcluster status` beside a running two-host job on loopback: the round, members, cluster
//! and restart count it shows equal what the tasks saw (`TF_CONFIG`,
//! `TFCLUSTER_RESTART_COUNT`), the last failure names the task that failed, `--watch` prints
//! the change within seconds of it (not a poll's 10 s), the job list holds the job; an unknown job is named with
//! the ones there are; a rendezvous that is down fails within `--timeout`, naming it.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::elastic_run::{expect_exits, scratch, two_agents_at};
use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Prints `seen RANK LOCAL ROUND RESTARTS TF_CONFIG`. In round 1, node 1's local task 1 fails
/// (a line on stderr, exit 3) once `$DIR/fail` exists, and the other tasks wait to be
/// stopped; in later rounds every task exits 0 once `$DIR/done` exists.
const TASK: &str = r#"
echo "seen $TFCLUSTER_NODE_RANK $TFCLUSTER_LOCAL_TASK $TFCLUSTER_ROUND $TFCLUSTER_RESTART_COUNT $TF_CONFIG"
if [ "$TFCLUSTER_ROUND" = 1 ]; then
  if [ "$TFCLUSTER_NODE_RANK$TFCLUSTER_LOCAL_TASK" = 11 ]; then
    while [ ! -e "$DIR/fail" ]; do sleep 0.05; done
    echo "failing on purpose" >&2; exit 3
  fi
  exec sleep 1000
fi
while [ ! -e "$DIR/done" ]; do sleep 0.05; done
"#;

/// The `seen` lines of round `round`: (rank, local task, restarts, TF_CONFIG), once all four
/// tasks printed theirs.
fn seen(agents: &[Launch; 2], round: u64) -> Vec<(u64, u64, u64, Value)> {
    let started = Instant::now();
    loop {
        let lines: Vec<_> = agents
            .iter()
            .flat_map(|a| a.stdout().lines().map(str::to_owned).collect::<Vec<_>>())
            .filter_map(|line| {
                let rest = line.split_once("] seen ")?.1.to_owned();
                let fields: Vec<&str> = rest.splitn(5, ' ').collect();
                let number = |i: usize| fields[i].parse::<u64>().unwrap();
                (number(2) == round).then(|| {
                    (
                        number(0),
                        number(1),
                        number(3),
                        serde_json::from_str(fields[4]).unwrap(),
                    )
                })
            })
            .collect();
        if lines.len() == 4 {
            return lines;
        }
        if started.elapsed() > TIMEOUT {
            agents[0].fail(&format!("round {round}: {} of 4 tasks seen", lines.len()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `tfcluster status ARGS --format json` once: its JSON.
fn status_json(args: &[&str]) -> Value {
    let mut status = Launch::start(&[&["status"], args, &["--format", "json"]].concat(), &[]);
    let code = status.wait(TIMEOUT).code();
    if code != Some(0) {
        status.fail(&format!("exit {code:?}"));
    }
    serde_json::from_str(&status.stdout()).expect("status prints one JSON object")
}

fn touch(dir: &Path, name: &str) {
    std::fs::write(dir.join(name), "").unwrap();
}

#[test]
fn status_shows_what_the_tasks_saw_and_watch_prints_each_change_at_once() {
    let dir = scratch("status");
    let flags = [
        "--tasks-per-node",
        "2",
        "--max-restarts",
        "3",
        "--grace",
        "2s",
    ];
    let (mut agents, rdzv) = two_agents_at(dir.path(), &[], &flags, &["sh", "-c", TASK]);
    let target = ["--rdzv", rdzv.as_str(), "--rdzv-id", "default"];
    let first = seen(&agents, 1);

    let mut watch = Launch::start(
        &[&["status"], &target[..], &["--watch", "--format", "json"]].concat(),
        &[],
    );
    watch.lines_with("\"state\":\"running\"", 1, TIMEOUT);
    let round1 = status_json(&target);
    assert_eq!(round1["round"], 1);
    assert_eq!(round1["cluster"], first[0].3["cluster"], "{round1}");
    assert_eq!(round1["restart_count"], 0);

    // The failure ends round 1 at once, and the watch's held call answers then: it prints
    // the forming round within 4 s of the file that makes the task fail (a quiet run takes a
    // few hundred ms; a watch that waited out its 10 s poll instead would miss it).
    touch(dir.path(), "fail");
    let failed = Instant::now();
    let lines = watch.lines_with("\"restart_count\":1", 1, TIMEOUT);
    assert!(
        failed.elapsed() < Duration::from_secs(4),
        "--watch printed the restart {:?} after the failure",
        failed.elapsed()
    );
    let change: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(change["last_failure"]["task"], "worker:3", "{change}");

    // Round 2, as every task saw it and as status shows it.
    let second = seen(&agents, 2);
    let shown = loop {
        let shown = status_json(&target);
        if shown["round"] == 2 {
            break shown;
        }
    };
    assert_eq!(shown["state"], "running");
    assert_eq!(shown["cluster"], second[0].3["cluster"], "{shown}");
    for (rank, local, restarts, tf_config) in &second {
        assert_eq!(*restarts, 1, "TFCLUSTER_RESTART_COUNT");
        assert_eq!(shown["restart_count"], *restarts);
        let member = &shown["members"][*rank as usize];
        let task = &member["tasks"][*local as usize];
        assert_eq!(task["job"], tf_config["task"]["type"], "{shown}");
        assert_eq!(task["index"], tf_config["task"]["index"], "{shown}");
    }
    assert_eq!(shown["max_restarts"], 3);
    let last = &shown["last_failure"];
    assert_eq!(
        (&last["task"], &last["round"], &last["exit_code"]),
        (&"worker:3".into(), &1.into(), &3.into()),
        "{shown}"
    );
    assert!(
        last["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("failing on purpose")
    );
    assert_eq!(shown["last_end"]["reason"], "task_failed");
    assert_eq!(shown["waiting"], Value::Array(vec![]));

    let listed = status_json(&["--rdzv", &rdzv]);
    assert_eq!(listed["jobs"][0]["rdzv_id"], "default", "{listed}");
    assert_eq!(listed["jobs"][0]["state"], "running", "{listed}");

    let mut unknown = Launch::start(&["status", "--rdzv", &rdzv, "--rdzv-id", "nope"], &[]);
    assert_eq!(unknown.wait(TIMEOUT).code(), Some(1));
    assert!(
        unknown.stderr().contains(&format!(
            "no job \"nope\" at {rdzv}: it holds \"default\" (running)"
        )),
        "{}",
        unknown.stderr()
    );

    touch(dir.path(), "done");
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    // The watch ends with the job, its last line the success.
    assert_eq!(watch.wait(TIMEOUT).code(), Some(0), "{}", watch.stderr());
    let last: Value = serde_json::from_str(watch.stdout().lines().last().unwrap()).unwrap();
    assert_eq!(last["state"], "succeeded", "{last}");
}

#[test]
fn status_of_a_rendezvous_that_is_down_fails_within_its_timeout_naming_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rdzv = format!("127.0.0.1:{port}");
    let mut status = Launch::start(
        &[
            "status",
            "--rdzv",
            &rdzv,
            "--rdzv-id",
            "job",
            "--timeout",
            "2s",
        ],
        &[],
    );
    assert_eq!(status.wait(TIMEOUT).code(), Some(1));
    assert!(
        status.ran_for() < Duration::from_secs(5),
        "{:?}",
        status.ran_for()
    );
    let stderr = status.stderr();
    assert!(
        stderr.contains(&format!("cannot read job \"job\" at {rdzv}")),
        "{stderr}"
    );

    let mut usage = Launch::start(&["status", "--rdzv-id", "job"], &[]);
    assert_eq!(usage.wait(TIMEOUT).code(), Some(2));
    assert!(
        usage.stderr().contains("status needs --rdzv"),
        "{}",
        usage.stderr()
    );
}

/// A ParameterServerStrategy job's task: worker 1 (node 1's local task 1) fails once, at its
/// first start; the chief exits 0 once `$DIR/done` exists; the others serve.
const PSS_TASK: &str = r#"
echo "started $TFCLUSTER_NODE_RANK $TFCLUSTER_LOCAL_TASK $TFCLUSTER_RESTART_COUNT"
if [ "$TFCLUSTER_NODE_RANK$TFCLUSTER_LOCAL_TASK$TFCLUSTER_RESTART_COUNT" = 110 ]; then
  echo "failing on purpose" >&2; exit 3
fi
case "$TF_CONFIG" in
  *'"type":"chief"'*) while [ ! -e "$DIR/done" ]; do sleep 0.05; done; exit 0 ;;
esac
exec sleep 1000
"#;

#[test]
fn status_shows_a_task_restarted_in_place_while_its_round_runs() {
    let dir = scratch("status-in-place");
    let flags = [
        "--tasks-per-node",
        "2",
        "--layout",
        "chief=1,ps=1",
        "--grace",
        "1s",
    ];
    let (mut agents, rdzv) = two_agents_at(dir.path(), &[], &flags, &["sh", "-c", PSS_TASK]);
    let target = ["--rdzv", rdzv.as_str(), "--rdzv-id", "default"];
    // Five starts: four, and worker 1 again in place (restart count 1).
    let started = Instant::now();
    let shown = loop {
        let shown = status_json(&target);
        if shown["task_restarts"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break shown;
        }
        if started.elapsed() > TIMEOUT {
            agents[0].fail(&format!("no task restarted: {shown}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        (&shown["state"], &shown["round"]),
        (&"running".into(), &1.into())
    );
    assert_eq!(shown["restart_count"], 0, "no round restarted");
    assert_eq!(shown["restart_scope"], "auto");
    let restarted = &shown["task_restarts"][0];
    assert_eq!(
        (
            &restarted["task"],
            &restarted["restarts"],
            &restarted["failures"]
        ),
        (&"worker:1".into(), &1.into(), &1.into()),
        "{shown}"
    );
    assert_eq!(restarted["last_failure"]["exit_code"], 3, "{shown}");
    let mut text = Launch::start(&[&["status"], &target[..]].concat(), &[]);
    assert_eq!(text.wait(TIMEOUT).code(), Some(0), "{}", text.stderr());
    assert!(
        text.stdout()
            .contains("    worker:1: 1 restarts (1 counted), last: exited with status 3\n"),
        "{}",
        text.stdout()
    );
    touch(dir.path(), "done");
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    let restarts: Vec<String> = agents
        .iter()
        .flat_map(|a| a.stdout().lines().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|l| Some(l.split_once("] started ")?.1.to_owned()))
        .collect();
    assert_eq!(restarts.len(), 5, "{restarts:?}");
    assert!(restarts.contains(&"1 1 1".to_owned()), "{restarts:?}");
}
