//! [`Supervisor`]: TensorFlow tasks as child processes, each in a process group of its own,
//! their output behind their names (and in files of their own with [`TaskLog`], laid out by
//! [`TaskLogs`]: a directory per job and round), and stopped as a whole: SIGTERM to each group, a grace
//! period, SIGKILL to each group, and waiting for them. `tfcluster run --local` and the
//! elastic agent both supervise their tasks with it.
//!
//! With a watchdog ([`Supervisor::with_watchdog`]), a task that shows no progress (no
//! output, no touch of its [`PROGRESS_FILE`]) for its period is hung: [`Watchdog::hung`]
//! finds it, [`Supervisor::kill_hung`] asks for its Python stack (SIGABRT) and kills it, and
//! [`Supervisor::status`] reports its exit as [`TaskEnd::Hung`].

mod group;
mod metrics;
mod output;
mod task_log;
mod watchdog;

use std::io::PipeReader;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

pub use nix::sys::signal::Signal;

use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout_at};

pub use group::{Group, exit_code, spawn_group};
use metrics::ExitKind;
pub use metrics::{RestartCause, TaskMetrics};
use output::{Pump, Sink, Stream, Tail};
use task_log::LogFile;
pub use task_log::{TaskLog, TaskLogs};
pub(crate) use watchdog::Beacon;
use watchdog::Watch;
pub use watchdog::{DUMP_WAIT, PROGRESS_FILE, PROGRESS_START, WATCHDOG_START, Watchdog};

use crate::TaskEnd;

/// A task to start: a name for its output lines, its program and arguments, its extra
/// environment.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// What its output lines are prefixed with, in brackets: `worker:1`, `host/worker:1`.
    pub name: String,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Variables added to the supervisor's own environment.
    pub env: Vec<(String, String)>,
    /// Files its output goes to as well; `None`: ours only.
    pub log: Option<TaskLog>,
}

/// Why a task could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// No program was given.
    #[error("no command to run: give it after `--`")]
    NoCommand,
    /// The output pipes could not be made.
    #[error("cannot make a pipe")]
    Pipe(#[source] std::io::Error),
    /// The watchdog's progress file could not be made.
    #[error("cannot make a task's progress file ({PROGRESS_FILE})")]
    ProgressFile(#[source] std::io::Error),
    /// The program could not be started.
    #[error("cannot run {program}")]
    Start {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// How a task ended: its exit status, or why it could not be waited for.
pub type Exit = Result<ExitStatus, String>;

/// How `exit` ended the task.
pub fn task_end(exit: &Exit) -> TaskEnd {
    use std::os::unix::process::ExitStatusExt;
    match exit {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => TaskEnd::Exited(code),
            (None, Some(signal)) => TaskEnd::Signaled(signal),
            (None, None) => TaskEnd::Error(status.to_string()),
        },
        Err(e) => TaskEnd::Error(format!("could not be waited for ({e})")),
    }
}

/// `argv` as a command to start.
pub fn command(argv: &[String]) -> Result<Command, SpawnError> {
    let (program, args) = argv.split_first().ok_or(SpawnError::NoCommand)?;
    let mut command = Command::new(program);
    command.args(args);
    Ok(command)
}

/// A process started in a group of its own, its stdout and stderr pipes not yet read.
#[derive(Debug)]
pub(crate) struct Piped {
    child: Child,
    group: Group,
    stdout: PipeReader,
    stderr: PipeReader,
}

impl Piped {
    /// Its pid, until it is reaped.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its group.
    pub(crate) fn group(&self) -> Group {
        self.group
    }

    /// How it exited, once it has.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

/// Starts `command` ([`spawn_group`]) with its stdout and stderr into pipes of ours;
/// `program` names it in the error. Drop `command` after, so that only the process holds
/// the pipes' write ends.
pub(crate) fn spawn_piped(command: &mut Command, program: &str) -> Result<Piped, SpawnError> {
    let (stdout, stdout_writer) = std::io::pipe().map_err(SpawnError::Pipe)?;
    let (stderr, stderr_writer) = std::io::pipe().map_err(SpawnError::Pipe)?;
    command.stdout(stdout_writer).stderr(stderr_writer);
    let (child, group) = spawn_group(command).map_err(|source| SpawnError::Start {
        program: program.to_owned(),
        source,
    })?;
    Ok(Piped {
        child,
        group,
        stdout,
        stderr,
    })
}

/// Started tasks, their output pumps and their exits.
#[derive(Debug)]
pub struct Supervisor {
    tasks: Vec<Task>,
    exited_tx: mpsc::UnboundedSender<(usize, Exit)>,
    exited: mpsc::UnboundedReceiver<(usize, Exit)>,
    watch: Watch,
    metrics: TaskMetrics,
    /// Whether the tasks were signalled: an exit from now on counts as stopped.
    stopping: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct Task {
    name: String,
    group: Group,
    /// Once it exited: how.
    status: Option<Exit>,
    stderr: Tail,
    pumps: [Pump; 2],
}

impl Default for Supervisor {
    fn default() -> Self {
        Self::new()
    }
}

impl Supervisor {
    /// A supervisor of no tasks yet.
    pub fn new() -> Self {
        let (exited_tx, exited) = mpsc::unbounded_channel();
        Self {
            tasks: Vec::new(),
            exited_tx,
            exited,
            watch: Watch::new(None, WATCHDOG_START),
            metrics: TaskMetrics::default(),
            stopping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Counts starts, exits and running tasks into `metrics` (by default into metrics no
    /// registry holds).
    pub fn with_metrics(mut self, metrics: TaskMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Finds tasks that show no progress for `after` ([`watchdog`](Self::watchdog)); `None`
    /// (the default): no watchdog. With one, each task gets [`PROGRESS_FILE`], the path of
    /// an empty file in a directory the supervisor removes when dropped: touching it is
    /// progress, as any output is.
    pub fn with_watchdog(mut self, after: Option<Duration>) -> Self {
        self.watch = Watch::new(after, self.watch.watchdog().start());
        self
    }

    /// How long after its start a task is first judged by the watchdog ([`WATCHDOG_START`]
    /// by default): a start (TensorFlow's import, a strategy waiting for its slowest peer,
    /// the first trace) may be quiet for longer than the program ever is after. A task hung
    /// in its start is found at the end of it.
    pub fn with_watchdog_start(mut self, start: Duration) -> Self {
        self.watch = Watch::new(self.watch.watchdog().after(), start);
        self
    }

    /// The watchdog of the tasks started from now on: await its
    /// [`hung`](Watchdog::hung) beside [`next_exit`](Self::next_exit), and pass what it finds
    /// to [`kill_hung`](Self::kill_hung).
    pub fn watchdog(&self) -> Watchdog {
        self.watch.watchdog()
    }

    /// Starts `task` in a process group of its own, stdin closed, each line of its output
    /// behind `[name] `; returns its index. Call within a tokio runtime.
    pub fn start(&mut self, task: TaskSpec) -> Result<usize, SpawnError> {
        let mut process = command(&task.argv)?;
        let (beacon, progress_file) = self.prepare()?;
        process
            .envs(task.env)
            .envs(progress_file)
            .stdin(Stdio::null());
        let started = spawn_piped(&mut process, &task.argv[0])?;
        // The command (and the pipe ends it holds) goes now, so the pumps see the end of the
        // output when the task and everything it started are gone.
        drop(process);
        Ok(self.adopt(task.name, task.log, started, beacon))
    }

    /// What a task to be started needs from the watchdog: the beacon that records its
    /// progress, and the variable naming its progress file (none without a watchdog), to add
    /// to its environment.
    pub(crate) fn prepare(&mut self) -> Result<(Beacon, Option<(String, String)>), SpawnError> {
        self.watch.prepare().map_err(SpawnError::ProgressFile)
    }

    /// Supervises `process`, started elsewhere (a warm interpreter handed its round, with the
    /// environment [`prepare`](Self::prepare) gave), as task `name`: as
    /// [`start`](Self::start) does from its spawn on; returns its index.
    pub(crate) fn adopt(
        &mut self,
        name: String,
        log: Option<TaskLog>,
        process: Piped,
        beacon: Beacon,
    ) -> usize {
        let Piped {
            mut child,
            group,
            stdout,
            stderr,
        } = process;
        let tail = Tail::default();
        let sink = |stream, path: Option<&std::path::Path>| Sink {
            stream,
            echo: log.as_ref().is_none_or(TaskLog::echo),
            file: path.map(|p| LogFile::create(p, log.as_ref().map_or("", TaskLog::header))),
        };
        let out = sink(Stream::Stdout, log.as_ref().map(TaskLog::out));
        let err = sink(Stream::Stderr, log.as_ref().map(TaskLog::err));
        let pumps = [
            Pump::start(stdout, &name, out, None, beacon.clone()),
            Pump::start(stderr, &name, err, Some(tail.clone()), beacon.clone()),
        ];
        let index = self.tasks.len();
        let exited = self.exited_tx.clone();
        self.watch.add(beacon.clone());
        tokio::spawn(async move {
            let status = child.wait().await.map_err(|e| e.to_string());
            beacon.exited();
            let _ = exited.send((index, status));
        });
        tracing::debug!(task = %name, group = ?group, "started");
        self.metrics.started();
        self.tasks.push(Task {
            name,
            group,
            status: None,
            stderr: tail,
            pumps,
        });
        index
    }

    /// The next task to exit and how, recorded; `None` once none runs. Cancel safe.
    ///
    /// # Errors
    ///
    /// None: a task that could not be waited for is an `Err` exit, not an error of the call.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an exit not yet returned stays for the next call.
    pub async fn next_exit(&mut self) -> Option<(usize, Exit)> {
        if self.running() == 0 {
            return None;
        }
        let (index, status) = self.exited.recv().await?;
        match &status {
            Ok(exit) => {
                tracing::info!(task = %self.tasks[index].name, status = %exit, "task exited")
            }
            Err(e) => {
                tracing::warn!(task = %self.tasks[index].name, error = %e, "task could not be waited for")
            }
        }
        self.metrics.exited(self.exit_kind(index, &status));
        self.tasks[index].status = Some(status.clone());
        Some((index, status))
    }

    /// Asks hung task `index` (what [`Watchdog::hung`] found) for its stack and kills it:
    /// SIGABRT and SIGCONT to its group (Python's faulthandler prints every thread's stack on
    /// SIGABRT; a stopped task must run to print), then SIGKILL to its group once its stderr
    /// closed, or after [`DUMP_WAIT`]. Its exit comes from [`next_exit`](Self::next_exit) as
    /// any other; [`status`](Self::status) says it hung. Call within a tokio runtime.
    pub fn kill_hung(&self, index: usize) {
        let task = &self.tasks[index];
        if task.status.is_none() {
            let quiet = self.watch.watchdog().after().unwrap_or_default();
            tracing::warn!(task = %task.name, ?quiet, "no progress: the task is hung; asking for its stack and killing it");
            watchdog::kill_hung(task.group, task.pumps[1].clone());
        }
    }

    /// How task `index` ended, as `tfcluster_task_exits_total` labels it.
    fn exit_kind(&self, index: usize, exit: &Exit) -> ExitKind {
        match self.status(index, exit) {
            TaskEnd::Hung { .. } => ExitKind::hung,
            _ if self.stopping.load(Relaxed) => ExitKind::stopped,
            TaskEnd::Exited(0) => ExitKind::ok,
            TaskEnd::Signaled(_) => ExitKind::signalled,
            // A non-zero exit, a task that could not run, and any end added later.
            _ => ExitKind::failed,
        }
    }

    /// How task `index` ended: [`task_end`] of its `exit`, or [`TaskEnd::Hung`] when the
    /// watchdog found it hung.
    pub fn status(&self, index: usize, exit: &Exit) -> TaskEnd {
        match (self.watch.beacon(index), self.watch.watchdog().after()) {
            (Some(beacon), Some(quiet)) if beacon.is_hung() => TaskEnd::Hung { quiet },
            _ => task_end(exit),
        }
    }

    /// Whether task `index` made progress past its start ([`PROGRESS_START`]: output after
    /// it, or a touch of its [`PROGRESS_FILE`] at any time): a failure without is a start
    /// that fails, which the crash-loop rule (`failure_policy::CrashLoop`) looks at.
    pub fn progressed(&self, index: usize) -> bool {
        self.watch.beacon(index).is_some_and(|b| b.progressed())
    }

    /// Kills task `index`'s process group (SIGKILL) for a restart, not a stop: its exit
    /// comes from [`next_exit`](Self::next_exit) as any other, and the other tasks run on.
    pub fn kill(&self, index: usize) {
        let task = &self.tasks[index];
        tracing::debug!(task = %task.name, "killing a task for its restart");
        task.group.signal(Signal::SIGKILL);
    }

    /// Sends `signal` to the process group of every task still running, and SIGKILL to every
    /// group (what an exited task started may still run there).
    pub fn signal(&self, signal: Signal) {
        tracing::debug!(%signal, running = %self.running_names(), "signalling the tasks");
        self.stopping.store(true, Relaxed);
        for task in &self.tasks {
            if task.status.is_none() || signal == Signal::SIGKILL {
                task.group.signal(signal);
            }
        }
    }

    /// Sends `signal` to task `index`'s process group alone, if it still runs: a stop that
    /// begins with one task (ParameterServerStrategy's chief saves while the servers serve).
    pub fn signal_task(&self, index: usize, signal: Signal) {
        let task = &self.tasks[index];
        if task.status.is_none() {
            tracing::debug!(task = %task.name, %signal, "signalling one task");
            self.stopping.store(true, Relaxed);
            task.group.signal(signal);
        }
    }

    /// Whether task `index` still runs.
    pub fn is_running(&self, index: usize) -> bool {
        self.tasks.get(index).is_some_and(|t| t.status.is_none())
    }

    /// How many tasks still run.
    pub fn running(&self) -> usize {
        self.tasks.iter().filter(|t| t.status.is_none()).count()
    }

    /// The names of the tasks still running, for messages.
    pub fn running_names(&self) -> String {
        let names: Vec<&str> = self
            .tasks
            .iter()
            .filter(|t| t.status.is_none())
            .map(|t| t.name.as_str())
            .collect();
        names.join(", ")
    }

    /// Task `index`'s name.
    pub fn name(&self, index: usize) -> &str {
        &self.tasks[index].name
    }

    /// The end of task `index`'s stderr, after waiting up to `wait` for its last lines (what
    /// it started may hold the pipe open longer).
    ///
    /// # Errors
    ///
    /// None: the text so far, however long the wait.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    pub async fn stderr_tail(&self, index: usize, wait: Duration) -> String {
        let task = &self.tasks[index];
        let _ = tokio::time::timeout(wait, task.pumps[1].finished()).await;
        task.stderr.text()
    }

    /// Gives the running tasks `grace` to exit on their own, then [`stop`](Self::stop)s
    /// them: how a job that succeeded ends (MultiWorkerMirroredStrategy's workers exit by
    /// themselves, ParameterServerStrategy's servers never do).
    ///
    /// # Errors
    ///
    /// None: every task has exited when it returns.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped midway, tasks may still run (signalled or not); call
    /// [`stop`](Self::stop), or drop the supervisor, which kills them.
    pub async fn wind_down(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while let Ok(Some(_)) = timeout_at(deadline, self.next_exit()).await {}
        if self.running() > 0 {
            tracing::info!(tasks = %self.running_names(), "stopping the tasks that still serve");
        }
        self.stop(grace).await;
    }

    /// SIGTERM to every running task's group, up to `grace` for them to exit, SIGKILL to
    /// every group, and waiting until every task has exited. A zero grace is SIGKILL alone.
    ///
    /// # Errors
    ///
    /// None: every task has exited when it returns.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped midway, the tasks got SIGTERM and may still run; call it again, or
    /// drop the supervisor, which kills them.
    pub async fn stop(&mut self, grace: Duration) {
        if !grace.is_zero() {
            self.signal(Signal::SIGTERM);
            let deadline = Instant::now() + grace;
            while let Ok(Some(_)) = timeout_at(deadline, self.next_exit()).await {}
        }
        if self.running() > 0 && !grace.is_zero() {
            tracing::warn!(tasks = %self.running_names(), "killing what is still running");
        }
        self.signal(Signal::SIGKILL);
        while self.next_exit().await.is_some() {}
    }

    /// Kills what the tasks left in their groups and waits up to `drain` for the last lines
    /// of their output; the supervisor is empty after.
    ///
    /// # Errors
    ///
    /// None: the supervisor is empty when it returns.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped midway, every group was killed, but output not yet drained is
    /// lost.
    pub async fn finish(&mut self, drain: Duration) {
        self.signal(Signal::SIGKILL);
        // The watchdog's beacons go with the tasks, whatever the drain does.
        self.watch.clear();
        self.stopping.store(false, Relaxed);
        let drained = Instant::now() + drain;
        for task in self.tasks.drain(..) {
            for pump in &task.pumps {
                if timeout_at(drained, pump.finished()).await.is_err() {
                    tracing::warn!(
                        task = %task.name,
                        "a task's output was still open after its process group was killed"
                    );
                    return;
                }
            }
        }
        // Exits of the tasks just dropped are of no interest to the next ones.
        while self.exited.try_recv().is_ok() {}
    }
}

impl Drop for Supervisor {
    /// Nothing outlives its supervisor: a dropped one kills every group it started.
    fn drop(&mut self) {
        for task in &self.tasks {
            task.group.signal(Signal::SIGKILL);
        }
    }
}
