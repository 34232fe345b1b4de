//! The variables no process the launcher starts inherits — tasks, warm interpreters, the
//! `--prewarm` check, health checks: each gets its launcher's environment less these. The
//! rendezvous token proves its agent to the rendezvous; a task that printed, recorded or
//! passed on its environment (a traceback, an experiment tracker, a child process) would
//! carry it off, and the task itself never needs it.

use tokio::process::Command;

/// The environment variable a rendezvous token may come from (`tfcluster run --rdzv`,
/// `rendezvous serve`), as an alternative to a token file; never passed to a task.
pub const TOKEN_ENV: &str = "TFCLUSTER_RDZV_TOKEN";

/// The variables withheld.
const WITHHELD: [&str; 1] = [TOKEN_ENV];

/// `command` without the withheld variables, whoever set them (the launcher's environment
/// or the command's own `env`): call it last, just before the spawn.
pub(crate) fn withhold(command: &mut Command) -> &mut Command {
    WITHHELD
        .iter()
        .fold(command, |command, name| command.env_remove(name))
}

/// Whether variable `name` is withheld: a warm interpreter is not handed it either.
pub(crate) fn is_withheld(name: &str) -> bool {
    WITHHELD.contains(&name)
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use tokio::process::Command;

    use super::TOKEN_ENV;
    use crate::supervise::spawn_group;

    #[tokio::test]
    async fn a_process_started_in_its_group_never_sees_the_token_even_when_given_it() {
        let mut command = Command::new("sh");
        command
            .args([
                "-c",
                &format!("echo \"token=${{{TOKEN_ENV}-unset}} kept=$KEPT\""),
            ])
            .env(TOKEN_ENV, "0123456789abcdef0123")
            .env("KEPT", "yes")
            .stdout(Stdio::piped());
        let (child, _group) = spawn_group(&mut command).expect("sh starts");
        let output = child.wait_with_output().await.expect("sh ends");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "token=unset kept=yes\n"
        );
    }
}
