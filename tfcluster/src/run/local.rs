//! `run --local`: a whole cluster as child processes of this one, and the job's outcome
//! decided as TensorFlow users expect it.
//!
//! The job succeeds when its leader (the chief, or worker 0 without one) exits 0 and no other
//! task failed. After the leader's success the others get the grace period to exit on their
//! own (MultiWorkerMirroredStrategy's workers do) and are then stopped, which is no failure
//! (ParameterServerStrategy's workers and parameter servers serve until stopped). The first
//! task to fail, before any stop, fails the job: the others are stopped with the failure
//! grace (none by default: they are killed at once, as nothing they hold can be saved
//! without the failed peer) and the message names it. A stop is SIGTERM (or the
//! SIGINT/SIGTERM we received, passed on), then SIGKILL after the grace period, to each
//! task's whole process group. With a watchdog, a task that shows no progress for its
//! period is hung ([`launcher::supervise::Watchdog`]): it is asked for its stack and killed,
//! and fails the job as any failure, the error naming it as hung with the end of its stderr
//! (the stack). The processes themselves are
//! [`launcher::supervise`]'s, as the `--rdzv` agent's are; the decision is made here.

use anyhow::anyhow;
use cluster_resolver::gpus;
use cluster_resolver::{Env, tf_config_for};
use cluster_spec::{ClusterSpec, TaskId};
use std::net::Ipv4Addr;
use std::time::Duration;

use failure_policy::{CrashLoop, Restart, RestartPolicy, Signature, Strategy, TaskEnd};
use launcher::supervise::{Exit, Signal, Supervisor, TaskLogs, TaskSpec};
use launcher::{ReservedPorts, RestartCause, TaskEnv, TaskGpus, TaskMetrics};
use metrics_endpoint::Health;
use metrics_endpoint::prometheus_client::registry::Registry;
use tokio::time::{Instant, sleep_until};

use crate::args::metrics::MetricsArgs;
use crate::args::stops::StopArgs;
use crate::args::watchdog::WatchdogArgs;
use crate::failure::Failure;
use crate::run::local_jobs::LocalJobs;
use crate::stop_signal::{Stop, stopped};

/// The job name of `run --local`'s task logs (`--log-dir DIR` puts them in `DIR/local/round-1`).
const LOCAL: &str = "local";

/// How many times a task was restarted in place: the variable each task gets.
const RESTART_COUNT: &str = "TFCLUSTER_RESTART_COUNT";

/// How long a failed task's last stderr lines are waited for (its crash-loop signature).
const TAIL_WAIT: Duration = Duration::from_millis(300);

/// Every task of `jobs` with its environment: its TF_CONFIG; its share of this host's GPUs
/// as CUDA_VISIBLE_DEVICES, split as `run --rdzv` splits them among a host's tasks
/// ([`TaskGpus`], in task order; left as ours on a host without GPUs); and Python's output
/// unbuffered (unless the caller chose otherwise) so its lines come through the pipes as
/// they are printed, not when a stopped server's buffer would have been flushed.
pub(crate) async fn task_envs(
    jobs: &LocalJobs,
    spec: &ClusterSpec,
    gpus_per_task: Option<launcher::GpusPerTask>,
) -> Result<Vec<(TaskId, Vec<(String, String)>)>, Failure> {
    let tasks = jobs.tasks();
    let count = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
    let gpus = TaskGpus::find(&Env::process(), count, gpus_per_task, gpus::host()).await?;
    tasks
        .into_iter()
        .zip(0u32..)
        .map(|(task, i)| {
            let tf_config = tf_config_for(spec, &task.job, task.task, None)?;
            Ok((
                task,
                TaskEnv::new(tf_config).with_gpus(&gpus, i).into_vars(),
            ))
        })
        .collect()
}

/// How `run --local` supervises its tasks: the flags besides the jobs and the command.
#[derive(Debug)]
pub(crate) struct LocalOptions {
    pub(crate) stops: StopArgs,
    pub(crate) gpus_per_task: Option<launcher::GpusPerTask>,
    pub(crate) watchdog: WatchdogArgs,
    pub(crate) restarts: RestartPolicy,
    pub(crate) logs: Option<TaskLogs>,
    pub(crate) metrics: MetricsArgs,
}

/// One task of the cluster across its in-place restarts.
#[derive(Debug)]
struct Slot {
    task: TaskId,
    /// Its environment, without `TFCLUSTER_RESTART_COUNT`.
    env: Vec<(String, String)>,
    port: u16,
    /// What its failure restarts.
    restart: Restart,
    /// Its in-place restarts, planned ones too: its `TFCLUSTER_RESTART_COUNT`.
    restarts: u32,
    /// Its failures restarted in place, which `--max-task-restarts` bounds.
    failures: u32,
    /// Its port, held from its death to its restart.
    held: Option<ReservedPorts>,
}

/// Runs `command` once per task of `jobs` and waits for the job's outcome; restarts failed
/// tasks in place as their failure domain allows (ParameterServerStrategy's workers and
/// chief alone, a parameter server with the chief, the evaluator alone).
pub(crate) async fn run(
    jobs: &LocalJobs,
    command: &[String],
    options: LocalOptions,
) -> Result<(), Failure> {
    let LocalOptions {
        stops: StopArgs {
            grace,
            failure_grace,
        },
        gpus_per_task,
        watchdog,
        restarts,
        logs,
        metrics,
    } = options;
    let (spec, reserved) = jobs.cluster().map_err(anyhow::Error::msg)?;
    let ports = reserved.ports();
    let strategy = Strategy::of_jobs(spec.jobs());
    if let Some(warning) = restarts.scope.warning(strategy) {
        tracing::warn!("{warning}");
    }
    let mut slots: Vec<Slot> = task_envs(jobs, &spec, gpus_per_task)
        .await?
        .into_iter()
        .zip(ports)
        .map(|((task, env), port)| Slot {
            restart: restarts.scope.restart(strategy, &task.job),
            task,
            env,
            port,
            restarts: 0,
            failures: 0,
            held: None,
        })
        .collect();
    let leader = jobs.leader();
    let chief = slots.iter().position(|s| s.task.job == "chief");
    // Caught before the first task starts, so a Ctrl-C during the start stops what started.
    let mut signals = Stop::install();
    // Healthy while the tasks run: the port serves until this function returns.
    let task_metrics = TaskMetrics::default();
    let mut registry = Registry::default();
    task_metrics.register(&mut registry);
    let _serving = metrics.serve(registry, Health::new()).await?;
    let mut job = Supervisor::new()
        .with_metrics(task_metrics.clone())
        .with_watchdog(watchdog.watchdog)
        .with_watchdog_start(watchdog.watchdog_start);
    let watchdog = job.watchdog();
    // The tasks bind their ports themselves, from now.
    drop(reserved);
    if let Some(logs) = &logs {
        logs.start_round(LOCAL, 1).await;
    }
    let host = launcher::hostname();
    // The slot of each of the supervisor's indices: a restart is a new index.
    let mut slot_of = Vec::with_capacity(slots.len());
    for (index, slot) in slots.iter_mut().enumerate() {
        if let Err(failure) = start(&mut job, slot, command, logs.as_ref(), &host) {
            job.signal(Signal::SIGKILL);
            return Err(failure);
        }
        slot_of.push(index);
    }

    let mut ending: Option<Ending> = None;
    let mut loops = CrashLoop::default();
    // The chief, killed for a parameter server's restart: restarted when its exit comes.
    let mut chief_to_restart = false;
    // Set once the tasks were told to stop: their exits from then on are the stop's doing.
    let mut stopping = false;
    let mut deadline: Option<Instant> = None;
    while job.running() > 0 {
        tokio::select! {
            Some((index, status)) = job.next_exit() => {
                if stopping {
                    continue;
                }
                let slot = slot_of[index];
                let end = job.status(index, &status);
                if chief_to_restart && Some(slot) == chief {
                    chief_to_restart = false;
                    restart_in_place(&mut job, &mut slots[slot], &mut slot_of, slot, command, logs.as_ref(), &host)?;
                    continue;
                }
                if end.success() {
                    if ending.is_none() && slots[slot].task == leader {
                        tracing::info!(task = %leader.short_name(), ?grace, "the leader succeeded: the others have the grace period to exit");
                        ending = Some(Ending::Succeeded);
                        deadline = Some(Instant::now() + grace);
                    }
                    continue;
                }
                let why = match slots[slot].restart {
                    Restart::Round => Some(None),
                    in_place => {
                        // Its address is the restart's: held from now.
                        slots[slot].held = ReservedPorts::hold(Ipv4Addr::LOCALHOST.into(), &[slots[slot].port]).ok();
                        let tail = job.stderr_tail(index, TAIL_WAIT).await;
                        let progressed = job.progressed(index);
                        let why = why_not_in_place(&mut slots[slot], &end, &tail, progressed, &mut loops, &host, restarts);
                        if why.is_none() {
                            task_metrics.restarted(in_place, RestartCause::of(&end));
                        }
                        why.map(Some)
                    }
                };
                match why {
                    None => {
                        if slots[slot].restart == Restart::WithChief
                            && let Some(chief) = chief
                            && let Some(chief_index) = slot_of.iter().rposition(|&s| s == chief)
                        {
                            tracing::warn!(task = %slots[slot].task.short_name(), "a parameter server failed: restarting the chief too (it restores the variables from its checkpoint)");
                            chief_to_restart = true;
                            job.kill(chief_index);
                        }
                        restart_in_place(&mut job, &mut slots[slot], &mut slot_of, slot, command, logs.as_ref(), &host)?;
                    }
                    Some(why) => {
                        tracing::info!(task = %slots[slot].task.short_name(), ?failure_grace, "a task failed: stopping the others");
                        ending = Some(Ending::Failed { slot, index, status, why });
                        // With no failure grace, the others are killed at once.
                        if !failure_grace.is_zero() {
                            job.signal(Signal::SIGTERM);
                        }
                        stopping = true;
                        deadline = Some(Instant::now() + failure_grace);
                    }
                }
            }
            () = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if stopping {
                    tracing::warn!(tasks = %job.running_names(), "killing what is still running");
                    job.signal(Signal::SIGKILL);
                    deadline = None;
                } else {
                    tracing::info!(tasks = %job.running_names(), "stopping the tasks that still serve");
                    job.signal(Signal::SIGTERM);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
            // Its exit, soon after, is a failure as hung.
            index = watchdog.hung(), if !stopping => job.kill_hung(index),
            signal = signals.next() => {
                if stopping {
                    // A signal during a stop: the user will not wait for the grace period.
                    job.signal(Signal::SIGKILL);
                    deadline = None;
                } else {
                    ending = Some(Ending::Stopped(signal));
                    job.signal(signal);
                    stopping = true;
                    deadline = Some(Instant::now() + grace);
                }
            }
        }
    }
    // A hung task's stack is the end of its stderr, read before the supervisor lets go.
    let hung = match &ending {
        Some(Ending::Failed { index, status, .. }) => match job.status(*index, status) {
            hung @ TaskEnd::Hung { .. } => Some((hung, job.stderr_tail(*index, grace).await)),
            _ => None,
        },
        _ => None,
    };
    // What the tasks started and left in their groups goes too; then the last lines.
    job.finish(grace).await;
    match ending {
        Some(Ending::Succeeded) => Ok(()),
        Some(Ending::Failed {
            slot, status, why, ..
        }) => {
            let task = &slots[slot].task;
            let (name, device) = (task.short_name(), task.device_prefix());
            let log = match &logs {
                Some(logs) => format!(
                    "; its log: {}",
                    logs.task(LOCAL, 1, &task.job, task.task).err().display()
                ),
                None => String::new(),
            };
            let why = why.map(|why| format!(" ({why})")).unwrap_or_default();
            if let Some((hung, stack)) = hung {
                return Err(anyhow!(
                    "task {name} ({device}) {hung}{why}; the other tasks were stopped{log}; its \
                     stderr ended with:\n{}",
                    stack.trim_end()
                )
                .into());
            }
            let how = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("could not be waited for ({e})"),
            };
            Err(anyhow!(
                "task {name} ({device}) failed: {how}{why}; the other tasks were stopped{log}"
            )
            .into())
        }
        Some(Ending::Stopped(signal)) => Err(stopped(signal, "every task")),
        // Not reached: the loop ends once every task exited, and the leader's exit (or a stop
        // before it) sets the ending.
        None => Err(anyhow!("{} ended undecided", leader.short_name()).into()),
    }
}

/// Why the failure of the task in `slot` (it ended with `end`, its stderr with `tail`) is
/// not restarted in place though its domain allows it: a crash loop, or its bound passed;
/// `None`: restart it (counted unless planned).
fn why_not_in_place(
    slot: &mut Slot,
    end: &TaskEnd,
    tail: &str,
    progressed: bool,
    loops: &mut CrashLoop,
    host: &str,
    restarts: RestartPolicy,
) -> Option<String> {
    if end.is_planned() {
        return None;
    }
    let found = loops.failed(host, Signature::of(end, tail), progressed);
    if let Some(found) = found.filter(|_| !restarts.allow_crash_loops) {
        return Some(format!(
            "{found}: the job stops rather than restart it (--allow-crash-loops goes on)"
        ));
    }
    slot.failures += 1;
    (slot.failures > restarts.max_task_restarts).then(|| {
        format!(
            "its failure {}, more than --max-task-restarts {}",
            slot.failures, restarts.max_task_restarts
        )
    })
}

/// Starts the task of `slot` (again), its port let go just before; it is the supervisor's
/// next index.
fn start(
    job: &mut Supervisor,
    slot: &mut Slot,
    command: &[String],
    logs: Option<&TaskLogs>,
    host: &str,
) -> Result<usize, Failure> {
    let task = &slot.task;
    let log = logs.map(|logs| {
        logs.task(LOCAL, 1, &task.job, task.task)
            .with_header(format!("# tfcluster: {task} on {host}, round 1"))
    });
    let mut env = slot.env.clone();
    env.push((RESTART_COUNT.to_owned(), slot.restarts.to_string()));
    slot.held = None;
    job.start(TaskSpec {
        name: task.short_name(),
        argv: command.to_vec(),
        env,
        log,
    })
    .map_err(Failure::from)
}

/// Restarts the task of `slot` (index `slot` of the slots) in place, counted in its
/// `TFCLUSTER_RESTART_COUNT`.
fn restart_in_place(
    job: &mut Supervisor,
    task: &mut Slot,
    slot_of: &mut Vec<usize>,
    slot: usize,
    command: &[String],
    logs: Option<&TaskLogs>,
    host: &str,
) -> Result<(), Failure> {
    task.restarts += 1;
    tracing::warn!(task = %task.task.short_name(), restart = task.restarts, "restarting the task in place");
    start(job, task, command, logs, host)?;
    slot_of.push(slot);
    Ok(())
}

/// How the job ended.
enum Ending {
    Succeeded,
    Failed {
        slot: usize,
        index: usize,
        status: Exit,
        /// Why it was not restarted in place, when its domain allowed it.
        why: Option<String>,
    },
    Stopped(Signal),
}
