//! One daemon of the local cluster: a child process in the foreground (`-D`/`-F`), its output in
//! a log file, marked so that a later run can find it if this one dies without stopping it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use super::deadline;

/// The environment variable every process the cluster starts carries (daemons, and srun, whose
/// ranks inherit it); its value is the run directory. It survives exec and is inherited by
/// slurmstepd, so [`super::leftovers`] finds exactly our processes, whichever checkout started
/// them, and nothing else.
pub(crate) const MARKER: &str = "TFCLUSTER_XTASK_SLURM";

/// How long a daemon gets to exit after SIGTERM before SIGKILL (slurmctld saves its state).
const GRACE: Duration = Duration::from_secs(10);

/// A running daemon we started.
#[derive(Debug)]
pub(crate) struct Daemon {
    /// Its name in messages and the log file's stem: `munged`, `slurmctld`, `slurmd-node1`.
    pub(crate) name: String,
    child: Child,
    log: PathBuf,
    /// Set once it has been seen to exit, so stop and drop do not wait on it again.
    exited: Option<ExitStatus>,
}

impl Daemon {
    /// Starts `command` with no stdin, its stdout and stderr in `log` (emptied first), and
    /// [`MARKER`]`=run` in its environment.
    pub(crate) fn spawn(
        name: &str,
        mut command: Command,
        log: &Path,
        run: &Path,
    ) -> Result<Daemon, String> {
        let shown = deadline::show(&command);
        let file =
            File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {}: {e}", log.display()))?;
        let child = command
            .env(MARKER, run)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("could not start {name} ({shown}): {e}"))?;
        eprintln!("xtask: started {name} (pid {}): {shown}", child.id());
        Ok(Daemon {
            name: name.to_owned(),
            child,
            log: log.to_path_buf(),
            exited: None,
        })
    }

    /// `Some(status)` when the daemon has exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// An error saying the daemon exited, with its log tail; `Ok` while it runs.
    pub(crate) fn check_running(&mut self) -> Result<(), String> {
        match self.exited() {
            None => Ok(()),
            Some(status) => Err(format!(
                "{} exited ({status}); {}",
                self.name,
                self.log_tail()
            )),
        }
    }

    /// The last lines of the daemon's log, introduced by its path.
    pub(crate) fn log_tail(&self) -> String {
        let text = fs::read(&self.log).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        match text {
            Ok(text) => format!(
                "last lines of {}:\n{}",
                self.log.display(),
                bounded_process::tail(&text, 25)
            ),
            Err(e) => format!("cannot read {}: {e}", self.log.display()),
        }
    }

    /// Sends SIGTERM without waiting, so several daemons can shut down at once.
    pub(crate) fn terminate(&mut self) {
        if self.exited().is_none() {
            deadline::signal(self.child.id(), "TERM");
        }
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after a grace period) and reaps it; an error
    /// only when it survives even SIGKILL.
    pub(crate) fn stop(&mut self) -> Result<(), String> {
        if self.exited().is_some() {
            return Ok(());
        }
        match deadline::stop(&mut self.child, GRACE) {
            Some(status) => {
                self.exited = Some(status);
                Ok(())
            }
            None => Err(format!(
                "{} (pid {}) survived SIGKILL",
                self.name,
                self.child.id()
            )),
        }
    }
}
