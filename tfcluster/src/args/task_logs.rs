//! `run`'s `--log-dir DIR`, `--log-keep N` and `--quiet-tasks` (for `--local` and `--rdzv`):
//! each task's output to files as well, checked writable before any task starts.

use std::path::PathBuf;

use anyhow::Context as _;
use launcher::supervise::TaskLogs;

use crate::failure::Failure;

/// The task log flags.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TaskLogArgs {
    /// With --local or --rdzv: each task's stdout and stderr to files as well,
    /// DIR/JOB/round-N/TASKJOB-INDEX.out and .err (JOB: the --rdzv-id, or `local`; TASKJOB-INDEX:
    /// the task's global name, e.g. worker-3), each starting with a line naming the task, its
    /// host and round; the job's first failure names the failed task's .err file. A file that
    /// cannot be written (a full disk) is warned about once and its task runs on. DIR is made
    /// if missing and must be writable before any task starts. Directories made are 0700 and
    /// files 0600 (DIR may be shared): a job or round directory that is a symlink or another
    /// user's gets no file, nor does a symlink at a file's name.
    #[arg(long, value_name = "DIR", requires = "launcher")]
    pub(crate) log_dir: Option<PathBuf>,
    /// With --log-dir: keep only the newest N round directories of the job (all by default).
    #[arg(long, value_name = "N", requires = "log_dir", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) log_keep: Option<u32>,
    /// With --log-dir: task lines go to the files only, not to this command's output.
    #[arg(long, requires = "log_dir")]
    pub(crate) quiet_tasks: bool,
}

impl TaskLogArgs {
    /// The task logs the flags ask for, checked writable now.
    pub(crate) fn logs(&self) -> Result<Option<TaskLogs>, Failure> {
        let Some(dir) = &self.log_dir else {
            return Ok(None);
        };
        let logs = TaskLogs::new(dir)
            .with_keep(self.log_keep.map(|n| n as usize))
            .with_echo(!self.quiet_tasks);
        logs.check()
            .with_context(|| format!("cannot write task logs in --log-dir {}", dir.display()))?;
        Ok(Some(logs))
    }
}
