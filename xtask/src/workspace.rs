//! Where the workspace is, and running a command in it with a clear error.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The workspace root: the parent of this crate's directory.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Runs `command` from the workspace root; an error names the command and its exit status.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    let shown = started(command);
    let status = command.status();
    finished(&shown, status)
}

/// As [`run`], and returns what the command printed to stdout, which is also shown as it
/// comes.
pub(crate) fn run_echoed(command: &mut Command) -> Result<String, String> {
    let shown = started(command);
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    let mut text = String::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading the output of {shown}: {e}"))?;
        println!("{line}");
        text.push_str(&line);
        text.push('\n');
    }
    finished(&shown, child.wait())?;
    Ok(text)
}

/// The tests that libtest says passed in `stdout` (`test result: ok. 9 passed; ...`), over
/// every test binary that ran.
pub(crate) fn tests_passed(stdout: &str) -> usize {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split_once(" passed")?.0.parse::<usize>().ok())
        .sum()
}

/// Sets the workspace root as the directory of `command`, says it runs, and returns how it
/// is shown.
fn started(command: &mut Command) -> String {
    command.current_dir(root());
    let shown = format!("{command:?}");
    eprintln!("xtask: running {shown}");
    shown
}

fn finished(shown: &str, status: std::io::Result<ExitStatus>) -> Result<(), String> {
    let status = status.map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed: {status}"))
    }
}

// Not in a module named like the interop tests: `cargo xtask test` skips `interop::`.
#[cfg(test)]
mod tests {
    use super::tests_passed;

    #[test]
    fn counts_the_tests_that_passed() {
        let out = "running 9 tests\ntest interop::a ... ok\n\
                   test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 210 filtered out; \
                   finished in 80.12s\n\
                   test result: ok. 2 passed; 0 failed\n";
        assert_eq!(tests_passed(out), 11);
        assert_eq!(
            tests_passed("running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored\n"),
            0
        );
    }
}
