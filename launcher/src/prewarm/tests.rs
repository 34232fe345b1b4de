//! Which commands qualify, the handoff message, and the bootstrap run by plain `python3`
//! (no TensorFlow): what the script sees, its exit statuses, and cold starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::warm::handoff_message;
use super::*;
use crate::TaskEnd;
use crate::gpus::TaskGpus;
use crate::supervise::{Supervisor, TaskSpec, task_end};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn parse(words: &[&str]) -> Option<PythonCommand> {
    PythonCommand::parse(&argv(words))
}

#[test]
fn python_scripts_and_modules_qualify_with_their_interpreter_options() {
    let command = parse(&[
        "/usr/bin/python3.11",
        "-u",
        "-OO",
        "-W",
        "ignore",
        "-Xdev",
        "train.py",
        "-v",
    ])
    .unwrap();
    assert_eq!(
        command.options,
        argv(&["-u", "-OO", "-W", "ignore", "-Xdev"])
    );
    assert_eq!(command.target, argv(&["train.py", "-v"]));
    assert_eq!(command.script(), Some("train.py"));
    for qualifies in [
        &["python", "t.py"][..],
        &["python3", "-uB", "t.py"],
        &["python3", "-m", "pkg.main", "--x"],
    ] {
        assert!(parse(qualifies).is_some(), "{qualifies:?}");
    }
    assert_eq!(parse(&["python3", "-m", "pkg"]).unwrap().script(), None);
    for cold in [
        &["sh", "-c", "python t.py"][..],
        &["env", "python", "t.py"],
        &["python3", "-c", "print(1)"],
        &["python3", "-i", "t.py"],
        &["python3", "-"],
        &["python3"],
        &["python3", "-m"],
        &["python3", "-W"],
        &["python2", "t.py"],
        &["python3.x", "t.py"],
        &["pythonista", "t.py"],
        &["python3", "--", "t.py"],
    ] {
        assert_eq!(parse(cold), None, "{cold:?}");
    }
}

#[test]
fn the_handoff_is_one_json_object_of_the_round_environment_less_the_withheld() {
    const SECRET: &str = "LAUNCHER_TEST_HANDOFF_SECRET";
    crate::withhold_env(SECRET);
    let env = vec![
        ("TF_CONFIG".to_owned(), r#"{"task": "\n"}"#.to_owned()),
        (SECRET.to_owned(), "0123456789abcdef0123".to_owned()),
    ];
    let line = handoff_message(&env).to_string();
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(line, r#"{"env":{"TF_CONFIG":"{\"task\": \"\\n\"}"}}"#);
}

/// A fresh directory with `facts.py` (writes what it sees to `$OUT`, then exits as `$CODE`
/// says), `preloaded.py`, and `dies.py` (ends its interpreter when imported).
fn scripts(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tfcluster-prewarm-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("facts.py"),
        r#"import json, os, sys
facts = {
    "argv": sys.argv, "name": __name__, "path0": sys.path[0], "file": __file__,
    "preloaded": "preloaded" in sys.modules, "warm": os.environ.get("TFCLUSTER_WARM"),
    "stdin": sys.stdin.read(), "tf_config": os.environ.get("TF_CONFIG"),
}
with open(os.environ["OUT"], "w") as out:
    json.dump(facts, out)
code = os.environ["CODE"]
if code == "raise":
    raise ValueError("on purpose")
sys.exit(int(code))
"#,
    )
    .unwrap();
    std::fs::write(dir.join("preloaded.py"), "print('importing')\n").unwrap();
    std::fs::write(dir.join("dies.py"), "import os\nos._exit(5)\n").unwrap();
    dir
}

/// Runs `facts.py` with `CODE=code` as local task 0 of `pool`; its status, stderr tail and
/// facts.
async fn run(pool: &mut WarmPool, dir: &Path, code: &str) -> (TaskEnd, String, serde_json::Value) {
    let out = dir.join(format!("facts-{code}.json"));
    let spec = TaskSpec {
        name: format!("task-{code}"),
        argv: command(dir),
        env: vec![
            ("OUT".to_owned(), out.display().to_string()),
            ("CODE".to_owned(), code.to_owned()),
            ("TF_CONFIG".to_owned(), "{}".to_owned()),
        ],
        log: None,
    };
    let mut tasks = Supervisor::new();
    let index = pool.start_task(&mut tasks, 0, spec).await.unwrap();
    let (_, exit) = tokio::time::timeout(Duration::from_secs(30), tasks.next_exit())
        .await
        .unwrap()
        .unwrap();
    let tail = tasks.stderr_tail(index, Duration::from_secs(1)).await;
    let facts = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (task_end(&exit), tail, facts)
}

fn command(dir: &Path) -> Vec<String> {
    argv(&[
        "python3",
        &dir.join("facts.py").display().to_string(),
        "a",
        "b c",
    ])
}

#[tokio::test]
async fn a_warm_interpreter_runs_the_script_as_python_would() {
    let dir = scripts("warm");
    let modules = Prewarm::Modules(vec!["preloaded".to_owned()]);
    let mut pool = WarmPool::start(&command(&dir), &modules, &TaskGpus::inherit(), 1)
        .await
        .unwrap();
    let script = dir.join("facts.py").display().to_string();
    for code in ["0", "3", "raise"] {
        let (status, tail, facts) = run(&mut pool, &dir, code).await;
        assert_eq!(
            facts["argv"],
            serde_json::json!([script, "a", "b c"]),
            "{facts}"
        );
        assert_eq!(facts["name"], "__main__");
        assert_eq!(facts["file"], script.as_str());
        assert_eq!(
            facts["path0"],
            std::fs::canonicalize(&dir).unwrap().display().to_string()
        );
        assert_eq!(facts["preloaded"], true, "{facts}");
        assert!(
            facts["warm"]
                .as_str()
                .is_some_and(|t| t.parse::<f64>().is_ok()),
            "{facts}"
        );
        assert_eq!(facts["stdin"], "");
        assert_eq!(facts["tf_config"], "{}");
        let expected = match code {
            "raise" => 1,
            code => code.parse().unwrap(),
        };
        assert_eq!(status, TaskEnd::Exited(expected), "{tail}");
        if code == "raise" {
            let traceback = format!(
                "Traceback (most recent call last):\n  File \"{script}\", line 11, in <module>\n"
            );
            assert!(tail.starts_with(&traceback), "{tail}");
            assert!(tail.ends_with("ValueError: on purpose\n"), "{tail}");
        }
        // The next interpreter starts in the background, its predecessor having imported.
        pool.fill();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn a_warm_interpreter_that_died_starts_its_task_cold() {
    let dir = scripts("died");
    let modules = Prewarm::Modules(vec!["dies".to_owned()]);
    let mut pool = WarmPool::start(&command(&dir), &modules, &TaskGpus::inherit(), 1)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (status, _, facts) = run(&mut pool, &dir, "0").await;
    assert_eq!(status, TaskEnd::Exited(0));
    assert_eq!(facts["warm"], serde_json::Value::Null, "{facts}");
}

#[tokio::test]
async fn bad_input_is_said_before_joining() {
    let dir = scripts("bad");
    let missing = argv(&["python3", "nowhere/missing.py"]);
    let error = WarmPool::start(&missing, &Prewarm::Default, &TaskGpus::inherit(), 1)
        .await
        .unwrap_err();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(
        error.to_string(),
        format!(
            "python3: can't open file '{cwd}/nowhere/missing.py': [Errno 2] No such file or directory"
        )
    );
    let unknown = Prewarm::Modules(vec!["json".to_owned(), "no_such_module_x".to_owned()]);
    let error = WarmPool::start(&command(&dir), &unknown, &TaskGpus::inherit(), 1)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot prewarm module `no_such_module_x` (--prewarm): ModuleNotFoundError: No module named 'no_such_module_x'"
    );
}
