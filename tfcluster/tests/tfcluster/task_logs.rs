//! `run --log-dir`: each task's output in files of its own, a directory per round: after a
//! restart both rounds' files hold each task's lines, whole and in order, none lost; the
//! first failure names its file; `--local` writes them too; a directory that cannot be
//! written fails the command before any task runs; a disk that fills is warned about once
//! while the task runs on, its lines on the agent's output.

use std::path::Path;
use std::time::Duration;

use tempfile::TempDir;

use super::elastic_run::{expect_exits, scratch, two_agents_running};
use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Lines each task prints on stdout and on stderr in each round.
const LINES: usize = 500;

/// Each task (worker `w`, two a host) prints [`LINES`] numbered lines on stdout and stderr,
/// says it is done in `$DIR`, and waits for the round's four; in round 1 worker 3 then fails
/// (the others are killed with it), in round 2 all succeed.
const TASK: &str = r#"
w=$((TFCLUSTER_NODE_RANK * 2 + TFCLUSTER_LOCAL_TASK)); r=$TFCLUSTER_ROUND
i=0
while [ $i -lt "$LINES" ]; do echo "r$r w$w out $i"; echo "r$r w$w err $i" >&2; i=$((i + 1)); done
touch "$DIR/r$r-w$w"
while [ "$(ls "$DIR" | grep -c "^r$r-w")" -lt 4 ]; do sleep 0.05; done
if [ "$r" = 1 ] && [ "$w" = 3 ]; then exit 3; fi
if [ "$r" = 1 ]; then sleep 30; fi
"#;

/// Asserts `path` holds `header`, then exactly `lines`.
fn assert_file(path: &Path, header: &str, lines: impl Iterator<Item = String>) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let expected: Vec<String> = std::iter::once(header.to_owned()).chain(lines).collect();
    let found: Vec<&str> = text.lines().collect();
    assert_eq!(found, expected, "{}", path.display());
    assert!(text.ends_with('\n'), "{}: a last line cut", path.display());
}

#[test]
fn each_round_of_each_task_has_its_own_files_whole_and_in_order() {
    let dir = scratch("task-logs");
    let logs = dir.path().join("logs");
    let flags = [
        "--tasks-per-node",
        "2",
        "--max-restarts",
        "1",
        "--log-dir",
        logs.to_str().expect("a UTF-8 path"),
        "--quiet-tasks",
    ];
    let lines = LINES.to_string();
    let env = [("LINES", lines.as_str())];
    let mut agents = two_agents_running(dir.path(), &env, &flags, &["sh", "-c", TASK]);
    expect_exits(&mut agents, TIMEOUT, [0, 0]);
    for agent in &agents {
        // --quiet-tasks: the lines are in the files only.
        assert!(!agent.stdout().contains(" out "), "{}", agent.stdout());
        assert!(!agent.stderr().contains(" err "), "{}", agent.stderr());
    }
    for r in 1..=2 {
        for w in 0..4 {
            let header =
                format!("# tfcluster: /job:worker/replica:0/task:{w} on 127.0.0.1, round {r}");
            for stream in ["out", "err"] {
                let file = logs.join(format!("default/round-{r}/worker-{w}.{stream}"));
                let lines = (0..LINES).map(|i| format!("r{r} w{w} {stream} {i}"));
                assert_file(&file, &header, lines);
            }
        }
    }
}

#[test]
fn the_first_failure_names_its_log_file() {
    let dir = scratch("task-logs-failure");
    let logs = dir.path().join("logs");
    let logs_text = logs.to_str().expect("a UTF-8 path");
    let flags = ["--max-restarts", "0", "--log-dir", logs_text];
    let fail =
        r#"if [ "$TFCLUSTER_NODE_RANK" = 1 ]; then echo "it broke" >&2; exit 4; fi; sleep 30"#;
    let mut agents = two_agents_running(dir.path(), &[], &flags, &["sh", "-c", fail]);
    expect_exits(&mut agents, TIMEOUT, [1, 1]);
    let file = format!("{logs_text}/default/round-1/worker-1.err");
    for agent in &agents {
        assert!(
            agent
                .stderr()
                .contains(&format!("its log: {file} on 127.0.0.1")),
            "{}",
            agent.stderr()
        );
        // Without --quiet-tasks the lines are on the agent's output as well.
    }
    assert!(
        agents[1].stderr().contains("] it broke"),
        "{}",
        agents[1].stderr()
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a.json")).unwrap()).unwrap();
    assert_eq!(
        record["first_failure"]["log_file"],
        file.as_str(),
        "{record}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("it broke\n"), "{text}");
}

#[test]
fn local_tasks_have_files_and_an_unwritable_dir_fails_before_any_task_runs() {
    let dir = scratch("task-logs-local");
    let logs = dir.path().join("logs");
    let logs_text = logs.to_str().expect("a UTF-8 path");
    let say = r#"echo "task $(echo "$TF_CONFIG" | tr -dc 0-9)""#;
    let mut local = Launch::start(
        &[
            "run",
            "--local",
            "worker=2",
            "--log-dir",
            logs_text,
            "--",
            "sh",
            "-c",
            say,
        ],
        &[],
    );
    assert_eq!(local.wait(TIMEOUT).code(), Some(0), "{}", local.stderr());
    for w in 0..2 {
        let out =
            std::fs::read_to_string(logs.join(format!("local/round-1/worker-{w}.out"))).unwrap();
        assert!(
            out.starts_with(&format!("# tfcluster: /job:worker/replica:0/task:{w} on ")),
            "{out}"
        );
        assert_eq!(out.lines().count(), 2, "{out}");
    }

    // A directory under a regular file cannot be made: an error naming it, no task run.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let under = blocked.join("logs");
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let mut refused = Launch::start(
        &[
            "run",
            "--local",
            "worker=1",
            "--log-dir",
            under.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &touch,
        ],
        &[],
    );
    assert_eq!(
        refused.wait(TIMEOUT).code(),
        Some(1),
        "{}",
        refused.stderr()
    );
    assert!(
        refused.stderr().contains(&format!(
            "cannot write task logs in --log-dir {}",
            under.display()
        )),
        "{}",
        refused.stderr()
    );
    assert!(!marker.exists(), "a task ran");
}

/// A tmpfs of 64 KiB mounted on a fresh directory, unmounted when dropped: a disk that fills.
struct SmallDisk {
    dir: TempDir,
}

impl SmallDisk {
    fn mount() -> Self {
        let dir = scratch("task-logs-full");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs (the test command runs as root)");
        assert!(
            status.success(),
            "cannot mount a tmpfs on {}",
            dir.path().display()
        );
        Self { dir }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_disk_warns_once_and_the_task_runs_on_its_lines_on_our_output() {
    let disk = SmallDisk::mount();
    let logs = disk.dir.path().to_str().expect("a UTF-8 path").to_owned();
    // 5,000 lines of 60 bytes: 300 KB, past the disk's 64 KiB.
    let task = r#"i=0; while [ $i -lt 5000 ]; do echo "line $i of a task writing more than the disk holds"; i=$((i+1)); done"#;
    let mut local = Launch::start(
        &[
            "run",
            "--local",
            "worker=1",
            "--log-dir",
            &logs,
            "--",
            "sh",
            "-c",
            task,
        ],
        &[],
    );
    assert_eq!(local.wait(TIMEOUT).code(), Some(0), "{}", local.stderr());
    let warnings = local
        .stderr()
        .matches("cannot write a task's log file")
        .count();
    assert_eq!(warnings, 1, "{}", local.stderr());
    let stdout = local.stdout();
    assert_eq!(stdout.matches(" of a task writing").count(), 5000);
    assert!(
        stdout.contains("line 4999 of a task"),
        "the last line is shown"
    );
}
