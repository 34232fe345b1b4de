//! Task log files (`tfcluster run --log-dir`): [`TaskLogs`], where a job's tasks' output is
//! kept, a directory per round; [`TaskLog`], one task's two files; and the writer of each,
//! which never stops the task: a file that cannot be written (a full disk) is warned about
//! once and its lines still go to our output. Directories are made 0700 and files 0600, never
//! through a symlink ([`private_file`](crate::private_file)): a `--log-dir` may be shared.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::private_file;

/// Where a job's task logs go: `DIR/JOB/round-N/JOB-INDEX.out` and `.err`, JOB the rendezvous
/// id (or `local`), each file headed by a line naming the task, its host and round; the newest
/// [`with_keep`](Self::with_keep) round directories kept.
#[derive(Debug, Clone)]
pub struct TaskLogs {
    dir: PathBuf,
    keep: Option<usize>,
    echo: bool,
}

impl TaskLogs {
    /// Logs under `dir`, every round kept, each line still on our output too.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            keep: None,
            echo: true,
        }
    }

    /// Keep only the newest `keep` round directories of a job (at least one); `None`: all.
    pub fn with_keep(mut self, keep: Option<usize>) -> Self {
        self.keep = keep.map(|k| k.max(1));
        self
    }

    /// Whether task lines still go to our output as well (`--quiet-tasks`: not).
    pub fn with_echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }

    /// The directory every job's logs are under.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Round `round`'s directory of job `job`.
    pub fn round_dir(&self, job: &str, round: u64) -> PathBuf {
        self.dir
            .join(path_component(job))
            .join(format!("round-{round}"))
    }

    /// The files of task `job:index` (a TensorFlow job name) in round `round` of `rdzv`.
    pub fn task(&self, rdzv: &str, round: u64, job: &str, index: u32) -> TaskLog {
        let stem = format!("{}-{index}", path_component(job));
        let dir = self.round_dir(rdzv, round);
        TaskLog {
            out: dir.join(format!("{stem}.out")),
            err: dir.join(format!("{stem}.err")),
            header: String::new(),
            echo: self.echo,
        }
    }

    /// Makes round `round`'s directory of job `job` and removes the job's older rounds past
    /// [`with_keep`](Self::with_keep), on tokio's blocking threads (an old round's logs can
    /// be large, and the agent's heartbeats must not wait for a disk); a failure is a
    /// warning, never the round's end (the tasks' lines still reach our output).
    ///
    /// # Errors
    ///
    /// None: a failure is a warning.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped, the directory work still finishes on its thread.
    pub async fn start_round(&self, job: &str, round: u64) {
        let (logs, job) = (self.clone(), job.to_owned());
        if let Err(e) = tokio::task::spawn_blocking(move || logs.start_round_now(&job, round)).await
        {
            tracing::warn!(error = %e, "cannot prepare the round's log directory");
        }
    }

    fn start_round_now(&self, job: &str, round: u64) {
        let dir = self.round_dir(job, round);
        let job_dir = self.dir.join(path_component(job));
        // Both made here, inside a directory others may share: ours, or not written.
        let made = private_file::create_dir_all(&dir)
            .and_then(|()| private_file::check_own_dir(&job_dir))
            .and_then(|()| private_file::check_own_dir(&dir));
        if let Err(e) = made {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot make the round's log directory; task output goes to ours only");
            return;
        }
        let Some(keep) = self.keep else { return };
        let Ok(entries) = std::fs::read_dir(&job_dir) else {
            return;
        };
        let mut rounds: Vec<(u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let n = e
                    .file_name()
                    .to_str()?
                    .strip_prefix("round-")?
                    .parse()
                    .ok()?;
                Some((n, e.path()))
            })
            .collect();
        rounds.sort_unstable_by_key(|(n, _)| std::cmp::Reverse(*n));
        for (_, old) in rounds.into_iter().skip(keep) {
            if let Err(e) = std::fs::remove_dir_all(&old) {
                tracing::warn!(dir = %old.display(), error = %e, "cannot remove an old round's logs");
            }
        }
    }

    /// Checks that logs can be written under the directory (making it): what `--log-dir`
    /// checks before any task starts.
    ///
    /// # Errors
    ///
    /// The directory cannot be made, or a file cannot be written in it.
    pub fn check(&self) -> std::io::Result<()> {
        private_file::create_dir_all(&self.dir)?;
        let probe = self
            .dir
            .join(format!(".tfcluster-probe-{}", std::process::id()));
        private_file::create(&probe)?.write_all(b"probe\n")?;
        std::fs::remove_file(&probe)
    }
}

/// One task's log files: its stdout to [`out`](Self::out), its stderr to [`err`](Self::err).
#[derive(Debug, Clone)]
pub struct TaskLog {
    out: PathBuf,
    err: PathBuf,
    header: String,
    echo: bool,
}

impl TaskLog {
    /// Each file starts with `header`, one line (e.g. `# tfcluster: /job:worker/task:1 on
    /// node2, round 3`).
    pub fn with_header(mut self, header: impl Into<String>) -> Self {
        self.header = header.into();
        self
    }

    /// Where its stdout goes.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Where its stderr goes.
    pub fn err(&self) -> &Path {
        &self.err
    }

    /// Whether its lines go to our output too.
    pub(crate) fn echo(&self) -> bool {
        self.echo
    }

    pub(crate) fn header(&self) -> &str {
        &self.header
    }
}

/// A log file being written, line by line, by its pipe's copying thread (the only writer, so
/// its lines are whole and in order).
#[derive(Debug)]
pub(crate) struct LogFile {
    path: PathBuf,
    file: Option<File>,
}

impl LogFile {
    /// Creates `path` (truncating it) and writes `header` as its first line; only in a
    /// directory of ours (a round's, which another user may have made first).
    pub(crate) fn create(path: &Path, header: &str) -> Self {
        let mut log = Self {
            path: path.to_owned(),
            file: None,
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        match private_file::check_own_dir(dir).and_then(|()| private_file::create(path)) {
            Ok(file) => {
                log.file = Some(file);
                if !header.is_empty() {
                    log.write(format!("{header}\n").as_bytes());
                }
            }
            Err(e) => log.failed(&e),
        }
        log
    }

    /// Appends `line` (with its newline); the first failure is warned about and ends the
    /// file's writing.
    pub(crate) fn write(&mut self, line: &[u8]) {
        if let Some(file) = &mut self.file
            && let Err(e) = file.write_all(line)
        {
            self.failed(&e);
        }
    }

    fn failed(&mut self, e: &std::io::Error) {
        tracing::warn!(file = %self.path.display(), error = %e, "cannot write a task's log file; its lines go to our output only from now on");
        self.file = None;
    }

    /// Whether lines still go to the file.
    pub(crate) fn is_open(&self) -> bool {
        self.file.is_some()
    }
}

/// `name` as one path component: letters, digits, `.`, `_` and `-` kept, anything else `_`,
/// and never `.` or `..`.
fn path_component(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.as_str() {
        "" | "." | ".." => format!("_{safe}"),
        _ => safe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_one_safe_path_component() {
        assert_eq!(path_component("train-3.a_b"), "train-3.a_b");
        assert_eq!(path_component("../etc/x y"), ".._etc_x_y");
        assert_eq!(path_component(".."), "_..");
        assert_eq!(path_component(""), "_");
    }

    #[test]
    fn a_full_disk_is_warned_about_once_and_ends_the_file_not_the_lines() {
        let mut log = LogFile::create(Path::new("/dev/full"), "# header");
        assert!(!log.is_open(), "the header hit ENOSPC");
        log.write(b"line\n");
        assert!(!log.is_open());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_round_directory_planted_as_a_symlink_gets_no_file() {
        let root = tempfile::tempdir().unwrap();
        let logs = TaskLogs::new(root.path().join("logs"));
        logs.check().unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::create_dir(root.path().join("logs/job")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, logs.round_dir("job", 2)).unwrap();
        logs.start_round("job", 2).await;
        let task = logs.task("job", 2, "worker", 0);
        assert!(!LogFile::create(task.err(), "# header").is_open());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A round of ours is written, its file ours alone.
        logs.start_round("job", 3).await;
        let task = logs.task("job", 3, "worker", 0);
        assert!(LogFile::create(task.err(), "# header").is_open());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(task.err()).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn older_rounds_past_keep_are_removed() {
        let dir = std::env::temp_dir().join(format!("tfcluster-logs-{}", std::process::id()));
        let logs = TaskLogs::new(&dir).with_keep(Some(2));
        for round in 1..=4 {
            logs.start_round("job", round).await;
        }
        let mut left: Vec<String> = std::fs::read_dir(dir.join("job"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["round-3", "round-4"]);
        let task = logs.task("job", 4, "worker", 1);
        assert_eq!(task.err(), dir.join("job/round-4/worker-1.err"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
