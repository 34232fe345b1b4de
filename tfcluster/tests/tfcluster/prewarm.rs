//! `tfcluster run --rdzv`'s warm restarts with real TensorFlow 2.21, one agent on loopback:
//! a round after a failure runs in an interpreter that imported TensorFlow before the round
//! formed; `--no-prewarm` and a command that is not Python start cold; a `--prewarm` module
//! that cannot be found and a script that does not exist fail before joining.

use std::time::Duration;

use super::elastic_run::{lone_agent, scratch};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `prewarm_check.py` with TensorFlow's python, as `run`'s command after `--`.
fn check_script() -> [String; 2] {
    super::tf_script("prewarm_check.py")
}

#[test]
fn a_round_after_a_failure_runs_warm_having_imported_tensorflow_before_it_formed() {
    let dir = scratch("prewarm-warm");
    let [python, script] = check_script();
    let dir_path = dir.path().to_str().unwrap();
    let flags = [
        "--max-restarts",
        "1",
        "--grace",
        "1s",
        "--",
        &python,
        &script,
    ];
    let mut agent = lone_agent(&flags, &[("DIR", dir_path), ("FAIL_FIRST", "1")], &[]);
    // Two imports of TensorFlow one after the other on a loaded two-core machine.
    let status = agent.wait(Duration::from_secs(300));
    assert_eq!(status.code(), Some(0), "{}", agent.stderr());
    let stdout = agent.stdout();
    assert!(
        stdout.contains("] prewarm preloaded=True warm=True started_before=True"),
        "{stdout}"
    );
}

#[test]
fn no_prewarm_and_commands_that_are_not_python_start_cold() {
    let dir = scratch("prewarm-cold");
    let [python, script] = check_script();
    let dir_path = dir.path().to_str().unwrap();
    let flags = ["--no-prewarm", "--", &python, &script];
    let mut agent = lone_agent(&flags, &[("DIR", dir_path)], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    let stdout = agent.stdout();
    assert!(
        stdout.contains("] prewarm preloaded=False warm=False started_before=False"),
        "{stdout}"
    );
    let shell = ["--", "sh", "-c", "echo \"shell ${TFCLUSTER_WARM:-cold}\""];
    let mut agent = lone_agent(&shell, &[], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    assert!(
        agent.stdout().contains("] shell cold"),
        "{}",
        agent.stdout()
    );
}

#[test]
fn a_missing_prewarm_module_or_script_fails_once_before_joining() {
    let dir = scratch("prewarm-bad");
    let [python, script] = check_script();
    let flags = ["--prewarm", "json,no_such_module_x", "--", &python, &script];
    let mut agent = lone_agent(&flags, &[], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(1), "{}", agent.stderr());
    let stderr = agent.stderr();
    assert!(
        stderr.contains(
            "cannot prewarm module `no_such_module_x` (--prewarm): \
             ModuleNotFoundError: No module named 'no_such_module_x'"
        ),
        "{stderr}"
    );
    let missing = dir.path().join("missing.py");
    let missing = missing.to_str().unwrap();
    let mut agent = lone_agent(&["--max-restarts", "3", "--", &python, missing], &[], &[]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(2), "{}", agent.stderr());
    let stderr = agent.stderr();
    let says =
        format!("{python}: can't open file '{missing}': [Errno 2] No such file or directory");
    assert_eq!(stderr.matches(&says).count(), 1, "{stderr}");
    assert!(!stderr.contains("round formed"), "{stderr}");
}
