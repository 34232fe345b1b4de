//! [`Supervisor`]: exits and stderr tails as they happen, and stops that leave nothing
//! running, however deaf the task. Each under the crate's test deadline ([`run`]).

use std::time::{Duration, Instant};

use cluster_spec::__private::error_chain::Chain;
use launcher::TaskEnd;
use launcher::supervise::{Supervisor, TaskSpec, task_end};

use crate::run;

fn sh(name: &str, script: &str) -> TaskSpec {
    TaskSpec {
        name: name.to_owned(),
        argv: vec!["sh".into(), "-c".into(), script.into()],
        env: vec![("GREETING".into(), "hello".into())],
        log: None,
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, s)| !s.starts_with('Z'))
    })
}

#[test]
fn an_exit_comes_with_its_status_and_stderr_tail() {
    run(async {
        let mut tasks = Supervisor::new();
        let index = tasks
            .start(sh("worker:0", "echo \"$GREETING\" >&2; exit 3"))
            .unwrap();
        let (exited, exit) = tasks.next_exit().await.unwrap();
        assert_eq!(exited, index);
        assert_eq!(task_end(&exit), TaskEnd::Exited(3));
        assert_eq!(
            tasks.stderr_tail(index, Duration::from_secs(5)).await,
            "hello\n"
        );
        assert!(tasks.next_exit().await.is_none(), "none runs");
        tasks.finish(Duration::from_secs(5)).await;
    });
}

#[test]
fn a_missing_program_is_named() {
    run(async {
        let mut tasks = Supervisor::new();
        let spec = TaskSpec {
            name: "t".into(),
            argv: vec!["/no/such/program".into()],
            env: vec![],
            log: None,
        };
        let err = tasks.start(spec).unwrap_err();
        assert_eq!(err.to_string(), "cannot run /no/such/program");
        assert!(
            Chain(&err)
                .to_string()
                .starts_with("cannot run /no/such/program: "),
            "{err}"
        );
    });
}

#[test]
fn stop_kills_a_deaf_group_after_the_grace() {
    run(async {
        let mut tasks = Supervisor::new();
        // Ignores SIGTERM, and so does the helper it leaves in its group.
        tasks
            .start(sh("ps:0", "trap '' TERM; sleep 1000 & echo $! >&2; wait"))
            .unwrap();
        let index = 0;
        // The helper's pid is the first stderr line.
        let started = Instant::now();
        let helper: i32 = loop {
            let tail = tasks.stderr_tail(index, Duration::from_millis(50)).await;
            if let Some(line) = tail.lines().next() {
                break line.trim().parse().unwrap();
            }
            assert!(started.elapsed() < Duration::from_secs(10), "no helper pid");
        };
        let stop = Instant::now();
        tasks.stop(Duration::from_millis(300)).await;
        assert!(
            stop.elapsed() >= Duration::from_millis(300),
            "the grace was given"
        );
        assert_eq!(tasks.running(), 0);
        tasks.finish(Duration::from_secs(5)).await;
        let gone = Instant::now();
        while alive(helper) && gone.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(helper), "the group's helper was killed too");
    });
}
