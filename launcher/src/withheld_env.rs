//! The variables no process the launcher starts inherits — tasks, warm interpreters, the
//! `--prewarm` check, health checks: each gets its launcher's environment less these. The
//! caller names them ([`withhold_env`]): a secret its process holds in the environment (the
//! elastic agent's rendezvous token) proves that process to someone, and a task that
//! printed, recorded or passed on its environment (a traceback, an experiment tracker, a
//! child process) would carry it off, though the task itself never needs it. The launcher
//! knows no such name itself: it does not know who decided what runs.
//!
//! The set is the process's, as the environment it filters is.

use std::collections::BTreeSet;
use std::sync::RwLock;

use tokio::process::Command;

/// The variables withheld, as [`withhold_env`] named them.
static WITHHELD: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// From now on, no process this launcher starts (in this process) inherits variable `name`,
/// whoever set it: the process's environment or a task's own `env`. Naming one twice is
/// the same as once.
pub fn withhold_env(name: &str) {
    let mut withheld = WITHHELD.write().unwrap_or_else(|e| e.into_inner());
    withheld.insert(name.to_owned());
}

/// `command` without the withheld variables: call it last, just before the spawn.
pub(crate) fn withhold(command: &mut Command) -> &mut Command {
    let withheld = WITHHELD.read().unwrap_or_else(|e| e.into_inner());
    withheld
        .iter()
        .fold(command, |command, name| command.env_remove(name))
}

/// Whether variable `name` is withheld: a warm interpreter is not handed it either.
pub(crate) fn is_withheld(name: &str) -> bool {
    let withheld = WITHHELD.read().unwrap_or_else(|e| e.into_inner());
    withheld.contains(name)
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use tokio::process::Command;

    use super::withhold_env;
    use crate::supervise::spawn_group;

    /// The variable the tests withhold: a secret's, as a caller names it.
    const SECRET: &str = "LAUNCHER_TEST_SECRET";

    #[tokio::test]
    async fn a_process_started_in_its_group_never_sees_a_withheld_variable_even_when_given_it() {
        withhold_env(SECRET);
        let mut command = Command::new("sh");
        command
            .args([
                "-c",
                &format!("echo \"secret=${{{SECRET}-unset}} kept=$KEPT\""),
            ])
            .env(SECRET, "0123456789abcdef0123")
            .env("KEPT", "yes")
            .stdout(Stdio::piped());
        let (child, _group) = spawn_group(&mut command).expect("sh starts");
        let output = child.wait_with_output().await.expect("sh ends");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "secret=unset kept=yes\n"
        );
    }
}
