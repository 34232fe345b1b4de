//! `run --local`: a whole cluster as child processes of this one, and the job's outcome
//! decided as TensorFlow users expect it.
//!
//! The job succeeds when its leader (the chief, or worker 0 without one) exits 0 and no other
//! task failed. After the leader's success the others get the grace period to exit on their
//! own (MultiWorkerMirroredStrategy's workers do) and are then stopped, which is no failure
//! (ParameterServerStrategy's workers and parameter servers serve until stopped). The first
//! task to fail, before any stop, fails the job: the others are stopped and the message names
//! it. A stop is SIGTERM (or the SIGINT/SIGTERM we received, passed on), then SIGKILL after
//! the grace period, to each task's whole process group.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use cluster_resolver::tf_config_for;
use cluster_spec::ClusterSpec;
use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout_at};

use crate::args::Failure;
use crate::child_process::{self, Group};
use crate::local_cluster::{LocalJobs, TaskId};
use crate::prefix::{Pump, Stream};
use crate::stop_signal::Stop;

/// The environment of one task: its TF_CONFIG, and Python's output unbuffered (unless the
/// caller chose otherwise) so its lines come through the pipes as they are printed, not when
/// a stopped server's buffer would have been flushed.
pub(crate) fn task_env(
    spec: &ClusterSpec,
    task: &TaskId,
) -> Result<Vec<(String, String)>, Failure> {
    let tf_config = tf_config_for(spec, &task.job, task.index, None)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let mut env = vec![("TF_CONFIG".to_owned(), tf_config)];
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        env.push(("PYTHONUNBUFFERED".to_owned(), "1".to_owned()));
    }
    Ok(env)
}

/// Runs `command` once per task of `jobs` and waits for the job's outcome.
pub(crate) async fn run(
    jobs: &LocalJobs,
    command: &[String],
    grace: Duration,
) -> Result<(), Failure> {
    let spec = jobs.cluster().map_err(Failure::Input)?;
    let tasks = jobs.tasks();
    let leader = jobs.leader();
    // Caught before the first task starts, so a Ctrl-C during the start stops what started.
    let mut signals = Stop::install();
    let (exited, mut exits) = mpsc::unbounded_channel();
    let mut job = Job {
        tasks: Vec::new(),
        pumps: Vec::new(),
    };
    for (index, task) in tasks.into_iter().enumerate() {
        if let Err(failure) = job.start(index, task, &spec, command, exited.clone()) {
            job.stop(Signal::SIGKILL);
            return Err(failure);
        }
    }
    drop(exited);

    let mut ending: Option<Ending> = None;
    // Set once the tasks were told to stop: their exits from then on are the stop's doing.
    let mut stopping = false;
    let mut deadline: Option<Instant> = None;
    while job.running() > 0 {
        tokio::select! {
            Some((index, status)) = exits.recv() => {
                job.tasks[index].status = Some(status.clone());
                let failed = !matches!(&status, Ok(status) if status.success());
                if stopping {
                    continue;
                }
                if failed {
                    ending = Some(Ending::Failed { index, status });
                    job.stop(Signal::SIGTERM);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                } else if ending.is_none() && job.tasks[index].id == leader {
                    tracing::info!("{leader} succeeded: the other tasks have {grace:?} to exit");
                    ending = Some(Ending::Succeeded);
                    deadline = Some(Instant::now() + grace);
                }
            }
            () = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if stopping {
                    tracing::warn!("killing what is still running: {}", job.running_names());
                    job.stop(Signal::SIGKILL);
                    deadline = None;
                } else {
                    tracing::info!("stopping the tasks that still serve: {}", job.running_names());
                    job.stop(Signal::SIGTERM);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
            signal = signals.next() => {
                if stopping {
                    // A signal during a stop: the user will not wait for the grace period.
                    job.stop(Signal::SIGKILL);
                    deadline = None;
                } else {
                    ending = Some(Ending::Stopped(signal));
                    job.stop(signal);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
        }
    }
    // What the tasks started and left in their groups goes too; then the last lines.
    job.stop(Signal::SIGKILL);
    let drained = Instant::now() + grace;
    for pump in job.pumps {
        if timeout_at(drained, pump.finished()).await.is_err() {
            tracing::warn!("a task's output was still open after its process group was killed");
            break;
        }
    }
    match ending {
        Some(Ending::Succeeded) => Ok(()),
        Some(Ending::Failed { index, status }) => {
            let task = &job.tasks[index].id;
            let how = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("could not be waited for ({e})"),
            };
            Err(Failure::Input(format!(
                "task {task} ({}) failed: {how}; the other tasks were stopped",
                task.device_prefix()
            )))
        }
        Some(Ending::Stopped(signal)) => Err(Failure::Status {
            code: u8::try_from(128 + signal as i32).unwrap_or(1),
            message: Some(format!("stopped by {signal}: every task was stopped")),
        }),
        // Not reached: the loop ends once every task exited, and the leader's exit (or a stop
        // before it) sets the ending.
        None => Err(Failure::Input(format!("{leader} ended undecided"))),
    }
}

/// How the job ended.
enum Ending {
    Succeeded,
    Failed {
        index: usize,
        status: Result<ExitStatus, String>,
    },
    Stopped(Signal),
}

/// The started tasks and the pumps of their output.
struct Job {
    tasks: Vec<Task>,
    pumps: Vec<Pump>,
}

struct Task {
    id: TaskId,
    group: Group,
    /// Once it exited: how (or why it could not be waited for).
    status: Option<Result<ExitStatus, String>>,
}

impl Job {
    /// Starts the task `index` of the job; its exit is sent to `exited`.
    fn start(
        &mut self,
        index: usize,
        id: TaskId,
        spec: &ClusterSpec,
        command: &[String],
        exited: mpsc::UnboundedSender<(usize, Result<ExitStatus, String>)>,
    ) -> Result<(), Failure> {
        let pipe = |e: std::io::Error| Failure::Input(format!("cannot make a pipe: {e}"));
        let (stdout, stdout_writer) = std::io::pipe().map_err(pipe)?;
        let (stderr, stderr_writer) = std::io::pipe().map_err(pipe)?;
        let mut process = child_process::command(command)?;
        process
            .envs(task_env(spec, &id)?)
            .stdin(Stdio::null())
            .stdout(stdout_writer)
            .stderr(stderr_writer);
        // The command (and the pipe ends it holds) is gone after the start, so the pumps see
        // the end of output when the task and its children are gone.
        let started = child_process::start(process)?;
        let name = id.to_string();
        self.pumps.push(Pump::start(stdout, &name, Stream::Stdout));
        self.pumps.push(Pump::start(stderr, &name, Stream::Stderr));
        let mut child = started.child;
        tokio::spawn(async move {
            let status = child.wait().await.map_err(|e| e.to_string());
            let _ = exited.send((index, status));
        });
        self.tasks.push(Task {
            id,
            group: started.group,
            status: None,
        });
        Ok(())
    }

    /// Sends `signal` to the process group of every task still running, and for SIGKILL to
    /// every group (what an exited task started may still run there).
    fn stop(&self, signal: Signal) {
        for task in &self.tasks {
            if task.status.is_none() || signal == Signal::SIGKILL {
                task.group.signal(signal);
            }
        }
    }

    fn running(&self) -> usize {
        self.tasks.iter().filter(|t| t.status.is_none()).count()
    }

    fn running_names(&self) -> String {
        let names: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| t.status.is_none())
            .map(|t| t.id.to_string())
            .collect();
        names.join(", ")
    }
}
