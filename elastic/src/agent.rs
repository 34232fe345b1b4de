//! [`Agent`]: one host's side of an elastic job: join, spawn, watch, stop, rejoin.
//!
//! The loop, per round: hold one free port per local task, join (or join again), wait for a
//! round, start each local task with its `TF_CONFIG` (releasing its port just before), and
//! heartbeat. A task that exits is reported (status, stderr tail); a failure ends the round
//! for every node. A node the rendezvous lost (its heartbeats unanswered for the heartbeat
//! timeout, or refused as unknown) ends its round as a lost node does for the others. When
//! the round ends the agent joins again at once (with fresh ports, so the next round's last
//! call does not close without it) and stops its tasks while it waits for the next round
//! and heartbeats in it. The next round's tasks start once the old ones are gone. When the
//! job succeeded the tasks get the grace to exit on their own; when it failed they are
//! stopped. A stop asked by the caller (a signal) is passed on to the tasks, which are then
//! stopped as usual, and the agent leaves; a second signal kills them at once, as `run
//! --local` does.
//!
//! **Which grace.** A stop is SIGTERM, a grace, then SIGKILL to each task's group. A round
//! that a failure ended (a task failed, a node was lost) or a job that failed stops its
//! tasks with the *failure grace*, none by default: the survivors' collective state is lost
//! with the peer (MultiWorkerMirroredStrategy can finish no all-reduce and no checkpoint
//! without it), and TensorFlow's workers take SIGTERM as a preemption notice and run on, so
//! a grace would only be waited out before every restart. A clean stop (a signal to the
//! agent, a node joining or leaving) gets the *grace* (10 s by default): every worker is
//! alive, so TensorFlow's `PreemptionCheckpointHandler` can save at the same step on each
//! and the next round resumes from it. A stop can take the whole grace, longer than a host
//! may be silent, which is why the agent heartbeats meanwhile.
//!
//! **Hung tasks.** With a watchdog ([`AgentOptions::with_watchdog`]), a local task that
//! shows no progress for its period — no output, no touch of its `TFCLUSTER_PROGRESS_FILE`
//! (Python: `tfcluster.progress()`), or SIGSTOPped — is hung: the agent asks for its Python
//! stack (SIGABRT to its group, which `PYTHONFAULTHANDLER=1` turns into every thread's stack
//! on its stderr, and SIGCONT), kills its group (SIGKILL once its stderr closed, at most
//! [`DUMP_WAIT`](launcher::supervise::DUMP_WAIT) later) and reports it as
//! [`TaskStatus::Hung`](crate::TaskStatus::Hung) with its stderr tail, the stack: a failure,
//! which ends the round and counts against the restarts as any other.
//!
//! **Stopping.** [`Agent::run`] takes its stop as a stream of signals (tokio's and
//! kube-runtime's shape: the caller owns the trigger, the agent awaits it), rather than a
//! channel only it reads: the first signal stops the agent at whatever point it is — joining,
//! waiting for a round, running one — and a second, while the tasks stop, kills them. A
//! stream that ends sends no more signals.
//!
//! **Tracing.** The agent's work runs in a span `agent` with the job's `rdzv_id` and, once it
//! joined, its `node`; each round's work in a span `round` with the round's number.
//!
//! **GPUs.** Before it joins, the agent finds its host's GPUs once ([`TaskGpus::find`], the
//! decision `cluster_resolver::gpus` makes for the Slurm resolver too) and gives each local
//! task its share as `CUDA_VISIBLE_DEVICES`: [`AgentOptions::with_gpus_per_task`] each, or the
//! host's GPUs split evenly. A host without GPUs leaves the variable as the agent's.
//!
//! **Warm restarts.** With [`AgentOptions::with_prewarm`] and a Python command, the agent
//! keeps a warm interpreter per local task ([`Prewarm`]): started before it joins (the first
//! round's imports overlap the rendezvous) and, after each round's start, once the one
//! handed that round has imported; handed the next round's environment when it forms; a
//! script that does not exist, or a `--prewarm` module that cannot be found, fails the agent
//! before it joins. A command that is not Python, or an interpreter that died, starts cold.
//!
//! **The port window.** A port is held by a listener of the agent until just before its task
//! starts; between the release and the task's own bind, another process of the host could
//! take it. The window is a few milliseconds plus the task's start-up (TensorFlow binds when
//! its server starts); a task that cannot bind fails, and the round restarts with new ports.

mod departure;
mod metrics;
mod wait_watcher;

use std::net::Ipv4Addr;
use std::pin::pin;
use std::time::{Duration, Instant};

use cloud_notices::Notice;
use cluster_resolver::Env;
use cluster_resolver::gpus as resolver_gpus;
use cluster_spec::__private::error_chain::Chain;
use futures_util::{Stream, StreamExt};
use tokio::sync::OnceCell;
use tracing::Instrument;

use departure::NoticeFile;
pub use departure::{NOTICE_FILE, Notices};
pub use metrics::AgentMetrics;
pub use wait_watcher::WaitWatcher;
use wait_watcher::{EndOfWait, Watcher};

use failure_policy::{Restart, Strategy, TaskEnd};
use launcher::supervise::{Signal, SpawnError, Supervisor, TaskLogs, TaskSpec};
use launcher::{
    GpuError, GpusPerTask, HealthCheck, HealthCheckFailed, Prewarm, PrewarmError, ReservedPorts,
    RestartCause, TaskGpus, WarmPool,
};

use crate::task_env::round_task_env;
use crate::{
    EndReason, Error, Heartbeats, JobDone, Join, Node, RendezvousClient, Round, RoundStatus,
    TaskStatus, Waited,
};

/// How long the agent waits for a task's last stderr lines before reporting its exit.
const TAIL_WAIT: Duration = Duration::from_millis(300);

/// How long an agent on its way out waits for the rendezvous to take its leave.
const LEAVE_WITHIN: Duration = Duration::from_millis(500);

/// How often a host that failed its health check runs it again.
const HEALTH_RETRY: Duration = Duration::from_secs(10);

/// The status of `sh -c` whose command was not found: a check that can never pass.
const NOT_FOUND: i32 = 127;

/// What the agent runs and how: see [`Agent::new`].
#[derive(Debug, Clone)]
pub struct AgentOptions {
    join: Join,
    command: Vec<String>,
    grace: Duration,
    failure_grace: Duration,
    join_timeout: Duration,
    gpus_per_task: Option<GpusPerTask>,
    watchdog: Option<Duration>,
    watchdog_start: Duration,
    prewarm: Prewarm,
    wait_watcher: Option<Watcher>,
    task_logs: Option<TaskLogs>,
    metrics: AgentMetrics,
    health_check: Option<HealthCheck>,
    notices: Option<Notices>,
}

impl AgentOptions {
    /// Joins with `join` (job id, config, host and name; its ports are the agent's to set)
    /// and runs `command` (a program and its arguments) as each local task. By default tasks
    /// have 10 s between SIGTERM and SIGKILL, or none when a failure ended their round, a
    /// round has 10 minutes to form, the host's GPUs are divided evenly among the local
    /// tasks, and no watchdog looks for hung tasks.
    pub fn new(join: Join, command: Vec<String>) -> Self {
        Self {
            join,
            command,
            grace: Duration::from_secs(10),
            failure_grace: Duration::ZERO,
            join_timeout: Duration::from_secs(600),
            gpus_per_task: None,
            watchdog: None,
            watchdog_start: launcher::supervise::WATCHDOG_START,
            prewarm: Prewarm::Off,
            wait_watcher: None,
            task_logs: None,
            metrics: AgentMetrics::default(),
            health_check: None,
            notices: None,
        }
    }

    /// The cloud's notices for this host: while one stands, each task can read it (the file
    /// in `TFCLUSTER_NOTICE_FILE`), and at its deadline less the notices' lead the agent
    /// stops its tasks with SIGTERM and leaves the job, as on a SIGTERM of its own, then
    /// ends with [`AgentOutcome::Departed`]. Default: none.
    pub fn with_notices(mut self, notices: Option<Notices>) -> Self {
        self.notices = notices;
        self
    }

    /// A check the host must pass before each join: one that fails keeps the host out of
    /// the job (it leaves, if it was in) and runs again every 10 s until it passes, for at
    /// most the join timeout ([`AgentError::Unhealthy`] then). A command that does not
    /// exist (`sh` says 127) fails the agent at its start. Default: none.
    pub fn with_health_check(mut self, check: Option<HealthCheck>) -> Self {
        self.health_check = check;
        self
    }

    /// How long a local task may show no progress (no output, no touch of its progress file)
    /// before it is hung: its stack asked for, killed, and reported as
    /// [`TaskStatus::Hung`](crate::TaskStatus::Hung). `None`: no watchdog.
    pub fn with_watchdog(mut self, watchdog: Option<Duration>) -> Self {
        self.watchdog = watchdog;
        self
    }

    /// How long after its start a local task is first judged by the watchdog
    /// ([`Supervisor::with_watchdog_start`]).
    pub fn with_watchdog_start(mut self, start: Duration) -> Self {
        self.watchdog_start = start;
        self
    }

    /// How long tasks have between SIGTERM and SIGKILL when they are stopped cleanly (a
    /// signal to the agent, a node joining or leaving), and to exit after the job succeeded.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long tasks have between SIGTERM and SIGKILL when a failure ended their round (a
    /// task failed, a node was lost) or the job failed; zero, the default, kills them at
    /// once. A failure leaves nothing to save: MultiWorkerMirroredStrategy's workers can
    /// finish no all-reduce and no checkpoint without the lost peer, and they take SIGTERM
    /// as a preemption notice and run on, so any grace is only waited out.
    pub fn with_failure_grace(mut self, failure_grace: Duration) -> Self {
        self.failure_grace = failure_grace;
        self
    }

    /// How long to wait for each round to form.
    pub fn with_join_timeout(mut self, join_timeout: Duration) -> Self {
        self.join_timeout = join_timeout;
        self
    }

    /// Writes each task's output to files as well, a directory per round
    /// ([`TaskLogs`]). Default: none.
    pub fn with_task_logs(mut self, logs: Option<TaskLogs>) -> Self {
        self.task_logs = logs;
        self
    }

    /// Tells `watcher` how each wait for a round goes (the hosts joined so far, what the
    /// round waits for). Default: no one.
    pub fn with_wait_watcher(mut self, watcher: std::sync::Arc<dyn WaitWatcher>) -> Self {
        self.wait_watcher = Some(Watcher(watcher));
        self
    }

    /// Counts the agent's rounds, restarts, heartbeats and tasks into `metrics`
    /// ([`AgentMetrics::register`]). Default: into metrics no registry holds.
    pub fn with_metrics(mut self, metrics: AgentMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// How many of the host's GPUs each local task gets (its `CUDA_VISIBLE_DEVICES`): `K`
    /// each, or every GPU shared by every task; `None`: the host's GPUs divided evenly among
    /// the local tasks. See [`TaskGpus::find`].
    pub fn with_gpus_per_task(mut self, gpus_per_task: Option<GpusPerTask>) -> Self {
        self.gpus_per_task = gpus_per_task;
        self
    }

    /// Which modules each local task's warm interpreter imports before its round, when the
    /// command is a Python program ([`Prewarm`] says which commands qualify). Off by default.
    pub fn with_prewarm(mut self, prewarm: Prewarm) -> Self {
        self.prewarm = prewarm;
        self
    }
}

/// How the agent's job ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AgentOutcome {
    /// The job's first task succeeded.
    Succeeded(JobDone),
    /// Failures passed the job's restarts; [`JobDone::first_failure`] is the story.
    Failed(JobDone),
    /// The caller stopped the agent with this signal; the tasks were stopped and the agent
    /// left.
    Stopped(Signal),
    /// The cloud gave notice that this host goes ([`AgentOptions::with_notices`]): the tasks
    /// were stopped (SIGTERM, so TensorFlow saved) and the agent left before the deadline.
    Departed(Notice),
}

/// Why an agent could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Talking to the rendezvous failed (unreachable, refused, no round in time).
    #[error(transparent)]
    Rendezvous(#[from] Error),
    /// The file the tasks read the cloud's notices from could not be made.
    #[error("cannot make the file the tasks read the cloud's notices from")]
    NoticeFile(#[source] std::io::Error),
    /// The ports of the local tasks could not be reserved.
    #[error("cannot reserve a port for a local task")]
    Reserve(#[source] std::io::Error),
    /// A local task could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The Python command cannot start (its script does not exist), or a module of
    /// [`Prewarm::Modules`] cannot be found: said before joining.
    #[error(transparent)]
    Prewarm(#[from] PrewarmError),
    /// The host's GPUs could not be found, or there are fewer than
    /// [`AgentOptions::with_gpus_per_task`] for each local task.
    #[error(transparent)]
    Gpus(#[from] GpuError),
    /// The health check's command does not exist (or cannot start): it could never pass.
    #[error("{0} (the command cannot run here, so the host could never join)")]
    HealthCheck(HealthCheckFailed),
    /// The host failed its health check for the whole join timeout.
    #[error(
        "the host failed its health check for {waited:?} (the join timeout), the last time: {failed}"
    )]
    Unhealthy {
        /// The last failure.
        failed: HealthCheckFailed,
        /// How long it kept failing.
        waited: Duration,
    },
}

/// One port per local task on every interface (TensorFlow's servers bind every interface
/// too), held until the tasks start.
fn reserve(count: u32) -> Result<ReservedPorts, AgentError> {
    ReservedPorts::bind(Ipv4Addr::UNSPECIFIED.into(), count as usize).map_err(AgentError::Reserve)
}

/// An elastic agent: runs the local tasks of a job's rounds until the job ends.
#[derive(Debug)]
pub struct Agent {
    client: RendezvousClient,
    options: AgentOptions,
    /// The host's GPUs split among the local tasks, found once.
    gpus: OnceCell<TaskGpus>,
    /// Where the tasks read the cloud's standing notice, with notices: made by
    /// [`run`](Self::run).
    notice_file: std::sync::OnceLock<std::sync::Arc<NoticeFile>>,
    /// The notice the agent left ahead of, once its departure fired.
    fired: departure::Fired,
}

/// What waiting for a round gave: the round, already heartbeating, or the job's end.
enum Next {
    Round(Round, Heartbeats),
    JobDone(JobDone),
}

/// What the time between two rounds gave.
enum Between {
    /// The next round (or the job's end); the last round's tasks are gone.
    Next(Next),
    /// Joining again or waiting failed; the tasks may still be stopping.
    Failed(AgentError),
    /// A signal came; the tasks may still be stopping.
    Stopped(Signal),
}

/// How the tasks of one round ended, as the agent saw it.
enum RoundEnded {
    /// The round ended; the tasks are stopped with this grace (none after a failure).
    Ended(Duration),
    Done(JobDone),
    Stopped(Signal),
}

impl Agent {
    /// An agent of the rendezvous behind `client`. From here on no task this process
    /// starts inherits [`TOKEN_ENV`](crate::TOKEN_ENV) ([`launcher::withhold_env`]): the
    /// token proves the agent, and a task never needs it.
    pub fn new(client: RendezvousClient, options: AgentOptions) -> Self {
        launcher::withhold_env(crate::TOKEN_ENV);
        // The rendezvous hears of each notice in the heartbeats, and of the departure in
        // the leave.
        let client = match &options.notices {
            Some(notices) => client.with_notices(notices.notices.clone()),
            None => client,
        };
        Self {
            client,
            options,
            gpus: OnceCell::new(),
            notice_file: std::sync::OnceLock::new(),
            fired: departure::Fired::default(),
        }
    }

    /// Which of this host's GPUs each local task gets: found the first time ([`TaskGpus::find`]
    /// with the agent's environment and the host's driver, [`resolver_gpus::host`]: NVML, else
    /// `nvidia-smi` from `PATH`, asked off the async threads, at most its deadline), then
    /// remembered. [`run`](Self::run) and
    /// [`first_round`](Self::first_round) call it before joining, so a host that cannot give
    /// its tasks their GPUs fails before any round waits for it.
    ///
    /// # Errors
    ///
    /// Those of [`TaskGpus::find`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before they are found, the next call finds them again.
    pub async fn task_gpus(&self) -> Result<&TaskGpus, AgentError> {
        self.gpus
            .get_or_try_init(|| async {
                let tasks = self.options.join.config().tasks_per_node();
                let per_task = self.options.gpus_per_task;
                TaskGpus::find(&Env::process(), tasks, per_task, resolver_gpus::host())
                    .await
                    .map_err(AgentError::from)
            })
            .await
    }

    /// Joins and waits for the first round, without running anything: what `--dry-run`
    /// prints. The round forms only when enough nodes join; the node leaves after.
    ///
    /// # Errors
    ///
    /// [`AgentError::Gpus`] when the host cannot give its
    /// tasks their GPUs, [`AgentError::Reserve`] when no port can be held, and
    /// [`AgentError::Rendezvous`] when the join or the wait fails (the rendezvous unreachable
    /// past the client's retries, a refusal, no round within the join timeout).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped after its join, the node stays in the job without leaving,
    /// until the rendezvous finds it silent (its heartbeat timeout).
    pub async fn first_round(&self) -> Result<Waited, AgentError> {
        self.task_gpus().await?;
        let reserved = reserve(self.options.join.config().tasks_per_node())?;
        let mut node = self
            .client
            .join(&self.options.join.clone().with_ports(reserved.ports()))
            .await?;
        let waited = self
            .client
            .wait_round(&mut node, self.options.join_timeout)
            .await;
        let _ = self.client.leave(&node).await;
        Ok(waited?)
    }

    /// Runs the job's rounds until it ends, or until a signal comes on `stop` (SIGINT or
    /// SIGTERM the caller caught): the first stops the agent wherever it is — finding its
    /// GPUs, joining, waiting for a round (it leaves, and returns
    /// [`AgentOutcome::Stopped`]), or running one (the signal goes on to the tasks, which
    /// are then stopped as usual) — and a second, while the tasks stop, kills them. A
    /// `stop` that ends sends no more signals; pass [`futures_util::stream::pending`] for an
    /// agent that only the job's end stops.
    ///
    /// # Errors
    ///
    /// [`AgentError::Gpus`] when the host cannot give its
    /// tasks their GPUs, [`AgentError::Reserve`] when no port can be held,
    /// [`AgentError::Spawn`] when a task's environment cannot be made, and
    /// [`AgentError::Rendezvous`] when a call fails (the rendezvous unreachable past the
    /// client's retries, a refusal, no round within the join timeout); the tasks are stopped
    /// and the node leaves first. A job that failed is no error:
    /// [`AgentOutcome::Failed`].
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped while its tasks run, the tasks are killed with the
    /// supervisor (their process groups get SIGKILL) and the node does not leave (the
    /// rendezvous finds it silent after its heartbeat timeout). Stop it through `stop`
    /// instead.
    pub async fn run(&self, stop: impl Stream<Item = Signal>) -> Result<AgentOutcome, AgentError> {
        let span = tracing::info_span!(
            "agent",
            rdzv_id = self.options.join.rdzv_id(),
            node = tracing::field::Empty
        );
        // The cloud's notice is a stop too, at its time: the same way out as a SIGTERM.
        let fired = self.fired.clone();
        let departing = match &self.options.notices {
            Some(notices) => {
                let file = match self.notice_file.get() {
                    Some(file) => file.clone(),
                    None => {
                        let file = NoticeFile::create().map_err(AgentError::NoticeFile)?;
                        self.notice_file
                            .get_or_init(|| std::sync::Arc::new(file))
                            .clone()
                    }
                };
                let metrics = self.options.metrics.clone();
                Some(departure::departure(
                    notices.clone(),
                    Some(file),
                    metrics,
                    fired.clone(),
                ))
            }
            None => None,
        };
        let departing = futures_util::stream::iter(departing).flatten();
        let mut stop = pin!(futures_util::stream::select(stop, departing));
        let outcome = self
            .run_rounds(&mut stop, &span)
            .instrument(span.clone())
            .await;
        // Left, done or given up: no longer in the job, whichever way.
        self.options.metrics.set_joined(false);
        match (outcome, fired.get()) {
            (Ok(AgentOutcome::Stopped(Signal::SIGTERM)), Some(notice)) => {
                Ok(AgentOutcome::Departed(notice.clone()))
            }
            (outcome, _) => outcome,
        }
    }

    /// [`run`](Self::run) in its span, which gets the node's id once it joined.
    async fn run_rounds(
        &self,
        stop: &mut (impl Stream<Item = Signal> + Unpin),
        span: &tracing::Span,
    ) -> Result<AgentOutcome, AgentError> {
        // The stop counts from the start: a signal while the agent finds its GPUs or joins
        // (a join is retried while the rendezvous is unreachable) stops it there.
        let gpus = tokio::select! {
            gpus = self.task_gpus() => gpus?,
            signal = next_signal(stop) => return Ok(AgentOutcome::Stopped(signal)),
        };
        // Checked before joining; the first round's interpreters import while it forms.
        let tasks_per_node = self.options.join.config().tasks_per_node();
        let prewarm = &self.options.prewarm;
        let mut warm =
            WarmPool::start(&self.options.command, prewarm, gpus, tasks_per_node).await?;
        let mut reserved = reserve(self.options.join.config().tasks_per_node())?;
        // Drawn now, so that a stop during the join can leave as this node.
        let join = self
            .options
            .join
            .clone()
            .with_ports(reserved.ports())
            .drawn();
        let metrics = &self.options.metrics;
        // From each join (or join again) to its round: `tfcluster_round_formation_seconds`.
        let mut waiting_since = Instant::now();
        let healthy = self.check_runs().await?;
        let mut node = tokio::select! {
            node = async {
                if !healthy {
                    tokio::time::sleep(HEALTH_RETRY).await;
                    self.until_healthy().await?;
                }
                Ok::<_, AgentError>(self.client.join(&join).await?)
            } => node?,
            signal = next_signal(stop) => {
                // The join may have taken effect (its answer on the way): a node that is
                // never heard from again would be lost, a failure counted against the job.
                if let Err(e) = self.client.leave_cut_short(&join, LEAVE_WITHIN).await {
                    tracing::debug!(error = %Chain(&e), "no leave after the join cut short");
                }
                return Ok(AgentOutcome::Stopped(signal));
            }
        };
        span.record("node", node.node_id());
        metrics.set_joined(true);
        tracing::info!(
            node = node.node_id(),
            host = node.host(),
            waits_for = node.waits_for(),
            "joined"
        );
        let mut tasks = Supervisor::new()
            .with_metrics(metrics.tasks().clone())
            .with_watchdog(self.options.watchdog)
            .with_watchdog_start(self.options.watchdog_start);
        // The next round when it was waited for while the last one's tasks stopped.
        let mut next = None;
        loop {
            let waited = match next.take() {
                Some(waited) => waited,
                None => tokio::select! {
                    waited = self.next_round(&mut node) => waited,
                    signal = next_signal(stop) => {
                        self.leave(&node).await;
                        return Ok(AgentOutcome::Stopped(signal));
                    }
                },
            };
            let (round, beats) = match waited {
                Ok(Next::Round(round, beats)) => (round, beats),
                Ok(Next::JobDone(done)) => {
                    self.leave(&node).await;
                    return Ok(done_outcome(done));
                }
                Err(e) => {
                    self.leave(&node).await;
                    return Err(e.into());
                }
            };
            tracing::info!(
                round = round.number(),
                restart_count = round.restart_count(),
                rank = round.rank(),
                cluster = %round.cluster_spec(),
                "round formed"
            );
            metrics.round_formed(
                round.number(),
                round.members().len(),
                waiting_since.elapsed(),
            );
            // The tasks bind these ports themselves now.
            drop(reserved);
            let ended = self
                .run_round(&mut tasks, &mut warm, &node, &round, beats, gpus, stop)
                .instrument(tracing::info_span!(
                    "round",
                    round = round.number(),
                    rank = round.rank()
                ))
                .await;
            match ended {
                Ok(RoundEnded::Ended(grace)) => {
                    waiting_since = Instant::now();
                    // Join before stopping, so the next round's last call waits for us.
                    reserved = reserve(self.options.join.config().tasks_per_node())?;
                    node.set_ports(reserved.ports());
                    match self
                        .between_rounds(&mut tasks, &mut node, grace, stop)
                        .await
                    {
                        Between::Next(waited) => next = Some(Ok(waited)),
                        Between::Failed(e) => {
                            tasks.stop(grace).await;
                            tasks.finish(self.options.grace).await;
                            self.leave(&node).await;
                            return Err(e);
                        }
                        Between::Stopped(signal) => {
                            let left = self.leave(&node);
                            let ((), ()) =
                                tokio::join!(self.stop_tasks(&mut tasks, signal, stop), left);
                            return Ok(AgentOutcome::Stopped(signal));
                        }
                    }
                }
                Ok(RoundEnded::Done(done)) => {
                    // The job is over, but a signal still counts: it cuts the tasks' grace
                    // short as it would in a round.
                    let signalled = {
                        let ending = async {
                            if done.succeeded {
                                tasks.wind_down(self.options.grace).await;
                            } else {
                                tasks.stop(self.options.failure_grace).await;
                            }
                        };
                        tokio::select! {
                            () = ending => None,
                            signal = next_signal(stop) => Some(signal),
                        }
                    };
                    match signalled {
                        Some(signal) => self.stop_tasks(&mut tasks, signal, stop).await,
                        None => tasks.finish(self.options.grace).await,
                    }
                    let _ = self.client.leave(&node).await;
                    return Ok(done_outcome(done));
                }
                Ok(RoundEnded::Stopped(signal)) => {
                    let left = self.leave(&node);
                    let ((), ()) = tokio::join!(self.stop_tasks(&mut tasks, signal, stop), left);
                    return Ok(AgentOutcome::Stopped(signal));
                }
                Err(e) => {
                    tasks.stop(self.options.grace).await;
                    tasks.finish(self.options.grace).await;
                    let _ = self.client.leave(&node).await;
                    return Err(e);
                }
            }
        }
    }

    /// After a round ended: joins again and waits for the next round (then heartbeats in
    /// it), which is what keeps this node alive at the rendezvous, while the last round's
    /// tasks stop with `grace` (a stop may take the whole grace: TensorFlow's workers take
    /// SIGTERM as a preemption notice and go on). The next round is returned once they are
    /// gone. A signal on `stop` breaks off at once, the tasks' stop unfinished (the caller
    /// stops them again).
    async fn between_rounds(
        &self,
        tasks: &mut Supervisor,
        node: &mut Node,
        grace: Duration,
        stop: &mut (impl Stream<Item = Signal> + Unpin),
    ) -> Between {
        let mut stopped = pin!(async {
            tasks.stop(grace).await;
            tasks.finish(self.options.grace).await;
        });
        let mut waiting = pin!(async {
            self.checked_rejoin(node).await?;
            Ok::<_, AgentError>(self.next_round(node).await?)
        });
        let (mut gone, mut waited) = (false, None);
        while !(gone && waited.is_some()) {
            tokio::select! {
                () = &mut stopped, if !gone => gone = true,
                w = &mut waiting, if waited.is_none() => match w {
                    Ok(w) => waited = Some(w),
                    Err(e) => return Between::Failed(e),
                },
                signal = next_signal(stop) => return Between::Stopped(signal),
            }
        }
        Between::Next(waited.expect("the loop ends with it"))
    }

    /// Runs the health check before the first join: whether the host passed it (true
    /// without one). Fails when its command cannot run at all (`sh` cannot start it), so the
    /// host would never join: said at the start, not retried for ever.
    async fn check_runs(&self) -> Result<bool, AgentError> {
        let Some(check) = &self.options.health_check else {
            return Ok(true);
        };
        match check.run().await {
            Ok(()) => Ok(true),
            Err(
                failed @ (HealthCheckFailed::Failed {
                    end: TaskEnd::Exited(NOT_FOUND),
                    ..
                }
                | HealthCheckFailed::Start { .. }),
            ) => Err(AgentError::HealthCheck(failed)),
            Err(failed) => {
                tracing::warn!(error = %failed, retry = ?HEALTH_RETRY, "the host failed its health check: it does not join until it passes");
                Ok(false)
            }
        }
    }

    /// Returns once the host passes its health check (at once without one), running it
    /// again every [`HEALTH_RETRY`] while it fails, each failure said; fails once it has
    /// failed for the join timeout (a host out of the job would never learn it ended).
    async fn until_healthy(&self) -> Result<(), AgentError> {
        let Some(check) = &self.options.health_check else {
            return Ok(());
        };
        let started = Instant::now();
        loop {
            let Err(failed) = check.run().await else {
                return Ok(());
            };
            let waited = started.elapsed();
            if waited >= self.options.join_timeout {
                return Err(AgentError::Unhealthy { failed, waited });
            }
            tracing::warn!(error = %failed, retry = ?HEALTH_RETRY, "the host failed its health check: it does not join until it passes");
            tokio::time::sleep(HEALTH_RETRY.min(self.options.join_timeout - waited)).await;
        }
    }

    /// Joins the job again for its next round, once the host passes its health check; a
    /// host that fails it leaves the job first (the next round forms without it), and joins
    /// as a new node once it passes.
    async fn checked_rejoin(&self, node: &mut Node) -> Result<(), AgentError> {
        let Some(check) = &self.options.health_check else {
            return Ok(self.client.rejoin(node).await?);
        };
        match check.run().await {
            Ok(()) => Ok(self.client.rejoin(node).await?),
            Err(failed) => {
                tracing::warn!(error = %failed, "the host failed its health check: leaving the job until it passes");
                self.leave(node).await;
                tokio::time::sleep(HEALTH_RETRY).await;
                self.until_healthy().await?;
                let join = self.options.join.clone().with_ports(node.ports().to_vec());
                *node = self.client.join(&join).await?;
                tracing::info!(
                    node = node.node_id(),
                    "the host passed its health check: joined again"
                );
                Ok(())
            }
        }
    }

    /// Leaves the job without waiting long: the agent is on its way out, and a rendezvous
    /// that does not answer finds the node silent at its heartbeat timeout anyway.
    async fn leave(&self, node: &Node) {
        if let Err(e) = self.client.leave_briefly(node, LEAVE_WITHIN).await {
            tracing::warn!(error = %Chain(&e), "cannot leave the job");
        }
    }

    /// Passes `signal` on to the tasks, then stops them as usual; a second signal on `stop`
    /// kills them at once (the user will not wait for the grace period).
    async fn stop_tasks(
        &self,
        tasks: &mut Supervisor,
        signal: Signal,
        stop: &mut (impl Stream<Item = Signal> + Unpin),
    ) {
        tasks.signal(signal);
        let killed = tokio::select! {
            () = tasks.stop(self.options.grace) => false,
            _ = next_signal(stop) => true,
        };
        if killed {
            tracing::warn!(tasks = %tasks.running_names(), "a second signal: killing the tasks");
            tasks.signal(Signal::SIGKILL);
            while tasks.next_exit().await.is_some() {}
        }
        tasks.finish(self.options.grace).await;
    }

    /// Waits for the next round and starts heartbeating in it at once.
    async fn next_round(&self, node: &mut Node) -> Result<Next, Error> {
        let waited = match self.wait_round(node).await {
            // Silent past the heartbeat timeout while it waited (its process stalled): once.
            Err(e) if e.is_not_found() => {
                tracing::warn!(error = %Chain(&e), "the rendezvous lost this host while it waited: joining again");
                self.client.rejoin(node).await?;
                self.wait_round(node).await
            }
            waited => waited,
        };
        Ok(match waited? {
            Waited::Round(round) => {
                let beats =
                    self.client
                        .heartbeats_counted(node, &round, self.options.metrics.clone());
                Next::Round(round, beats)
            }
            Waited::JobDone(done) => Next::JobDone(done),
        })
    }

    /// Waits for the node's next round, up to the join timeout, telling the wait watcher.
    async fn wait_round(&self, node: &mut Node) -> Result<Waited, Error> {
        let timeout = self.options.join_timeout;
        match &self.options.wait_watcher {
            None => self.client.wait_round(node, timeout).await,
            Some(Watcher(watcher)) => {
                // However the wait ends: a signal drops it mid-wait.
                let _ended = EndOfWait(watcher.as_ref());
                self.client
                    .wait_round_reporting(node, timeout, &mut |p| watcher.pending(p))
                    .await
            }
        }
    }

    /// Starts the round's local tasks and watches them (and, by `beats`, the round) until it
    /// ends.
    // What a round needs, each borrowed apart (the supervisor and the pool across rounds).
    #[allow(clippy::too_many_arguments)]
    async fn run_round(
        &self,
        tasks: &mut Supervisor,
        warm: &mut WarmPool,
        node: &Node,
        round: &Round,
        mut beats: Heartbeats,
        gpus: &TaskGpus,
        stop: &mut (impl Stream<Item = Signal> + Unpin),
    ) -> Result<RoundEnded, AgentError> {
        if let Some(logs) = &self.options.task_logs {
            logs.start_round(self.options.join.rdzv_id(), round.number())
                .await;
        }
        // The local task of each started process: one that could not start has none.
        let mut local_of = Vec::with_capacity(round.local_tasks().len());
        for local in 0..round.local_tasks().len() as u32 {
            self.start_local(tasks, warm, node, round, local, gpus, 0, &mut local_of)
                .await?;
        }
        let watchdog = tasks.watchdog();
        // The next round's interpreters import while this one runs.
        warm.fill();
        // The local chief, killed for a parameter server's restart: started again once its
        // exit comes (not reported: it did not fail).
        let mut chief_to_restart: Option<(u32, u32)> = None;
        // The local chief's in-place restarts in this round, numbered by the rendezvous: an
        // ask to restart it (its parameter server failed on another node) numbered no higher
        // is already carried out.
        let mut chief_restarts = 0;
        // When to stop the local chief alone so it saves: a parameter server's host on
        // another node has a notice (ParameterServerStrategy).
        let mut save_for_server: Option<Instant> = None;
        // The departure the chief was stopped for: the same one told again (its deadline
        // restated) stops no chief again, not even the one restarted since.
        let mut saved_for: Option<crate::HostNotice> = None;
        let mut told: Option<crate::HostNotice> = None;
        // This node's departure, held until the round ends (the chief saved) or this time:
        // it runs a parameter server and not the chief.
        let mut held: Option<(Signal, Instant)> = None;
        loop {
            tokio::select! {
                Some((index, exit)) = tasks.next_exit(), if tasks.running() > 0 => {
                    // Each round starts from an empty supervisor: its indices are this
                    // round's started processes.
                    let local: u32 = local_of[index];
                    if let Some((chief, restarts)) = chief_to_restart
                        && chief == local
                    {
                        chief_to_restart = None;
                        self.start_local(tasks, warm, node, round, local, gpus, restarts, &mut local_of).await?;
                        warm.fill();
                        continue;
                    }
                    let end = tasks.status(index, &exit);
                    // Its address is its in-place restart's: held until then.
                    let held = (!end.success())
                        .then(|| hold_port(&round.local_tasks()[local as usize].address))
                        .flatten();
                    let tail = tasks.stderr_tail(index, TAIL_WAIT).await;
                    let answer = self
                        .client
                        .report_exit(node, round.number(), local, end.clone().into(), &tail, tasks.progressed(index))
                        .await;
                    let answer = match answer {
                        Ok(answer) => answer,
                        Err(e) => {
                            tracing::warn!(error = %Chain(&e), "cannot report a task's exit");
                            continue;
                        }
                    };
                    let Some(in_place) = answer.in_place else {
                        continue;
                    };
                    chief_restarts = chief_restarts.max(answer.chief_restarts);
                    self.options.metrics.tasks().restarted(in_place, RestartCause::of(&end));
                    tracing::warn!(task = %round.local_tasks()[local as usize].task.short_name(), restarts = answer.task_restarts, scope = %in_place, "restarting the task in place");
                    if in_place == Restart::WithChief {
                        chief_to_restart = chief_to_restart.or_else(|| restart_chief(tasks, round, &local_of, answer.chief_restarts));
                    }
                    drop(held);
                    self.start_local(tasks, warm, node, round, local, gpus, answer.task_restarts, &mut local_of).await?;
                    warm.fill();
                }
                status = beats.next() => {
                    let status = match status {
                        Err(e) if lost_by_rendezvous(&e) => {
                            tracing::warn!(error = %Chain(&e), "the rendezvous lost this host: stopping its tasks and joining again");
                            self.options.metrics.round_ended(EndReason::NodeLost);
                            return Ok(RoundEnded::Ended(self.options.failure_grace));
                        }
                        status => status?,
                    };
                    return match status {
                        RoundStatus::RestartChief(restarts) => {
                            if restarts > chief_restarts {
                                chief_restarts = restarts;
                                self.options.metrics.tasks().restarted(Restart::WithChief, RestartCause::task_failed);
                                chief_to_restart = chief_to_restart.or_else(|| restart_chief(tasks, round, &local_of, restarts));
                            }
                            continue;
                        }
                        RoundStatus::ServerNotice { notice, .. } => {
                            let again = notice.as_ref().zip(saved_for.as_ref()).is_some_and(|(n, s)| same_departure(n, s));
                            if !again {
                                save_for_server = self.save_for_server(notice.as_ref());
                            }
                            told = notice;
                            continue;
                        }
                        RoundStatus::Running => Ok(RoundEnded::Ended(self.options.grace)),
                        RoundStatus::Ended(_) if let Some((signal, _)) = held => {
                            Ok(RoundEnded::Stopped(signal))
                        }
                        RoundStatus::Ended(end) => {
                            let grace = if end.reason.is_failure() {
                                self.options.failure_grace
                            } else {
                                self.options.grace
                            };
                            tracing::info!(round = end.round, reason = %end.reason, detail = %end.detail, ?grace, "round ended");
                            self.options.metrics.round_ended(end.reason);
                            Ok(RoundEnded::Ended(grace))
                        }
                        RoundStatus::JobDone(done) => Ok(RoundEnded::Done(done)),
                    };
                }
                // Its exit, soon after, is reported as hung.
                index = watchdog.hung() => tasks.kill_hung(index),
                () = sleep_until_some(save_for_server) => {
                    save_for_server = None;
                    saved_for = told.clone();
                    if let Some(chief) = pss_chief(tasks, round, &local_of) {
                        tracing::warn!("a parameter server's host is about to go: stopping the chief alone (SIGTERM) so it saves; the round ends when it exits");
                        tasks.signal_task(chief, Signal::SIGTERM);
                    }
                }
                () = sleep_until_some(held.map(|(_, until)| until)) => {
                    tracing::warn!("the chief has not saved: leaving before the deadline");
                    return Ok(RoundEnded::Stopped(held.map_or(Signal::SIGTERM, |h| h.0)));
                }
                signal = next_signal(stop) => {
                    if let Some(chief) = pss_chief(tasks, round, &local_of) {
                        self.stop_chief_first(tasks, chief, signal, stop).await;
                    } else if held.is_none()
                        && let Some(until) = self.hold_departure(round)
                    {
                        tracing::warn!("this host runs a parameter server: leaving once the chief saved (its round ends) or shortly before the deadline");
                        held = Some((signal, until));
                        continue;
                    }
                    return Ok(RoundEnded::Stopped(signal));
                }
            }
        }
    }

    /// When to stop the local chief so it saves ahead of `notice`, another member's parameter
    /// server's departure: this agent's notice lead before its deadline (at once without
    /// one); `None` when the notice was withdrawn.
    fn save_for_server(&self, notice: Option<&crate::HostNotice>) -> Option<Instant> {
        let remaining = notice?.remaining?;
        let lead = self
            .options
            .notices
            .as_ref()
            .map_or(Duration::MAX, |n| n.lead);
        tracing::warn!(notice = %notice?, "a parameter server's host has a notice: the chief saves ahead of it");
        Some(Instant::now() + remaining.saturating_sub(lead))
    }

    /// Until when this node's departure waits for its round to end, when it runs a
    /// parameter server of a ParameterServerStrategy round and not the chief (the chief, told
    /// by the rendezvous, saves while the server serves, and its exit ends the round): the
    /// deadline of the notice it leaves ahead of, less [`SERVER_MARGIN`].
    fn hold_departure(&self, round: &Round) -> Option<Instant> {
        let notice = self.fired.get()?;
        if round.config().strategy() != Strategy::ParameterServer {
            return None;
        }
        let jobs = || round.local_tasks().iter().map(|t| t.task.job.as_str());
        if !jobs().any(|j| j == "ps") || jobs().any(|j| j == "chief") {
            return None;
        }
        let left = notice.remaining(std::time::SystemTime::now())?;
        Some(Instant::now() + left.saturating_sub(SERVER_MARGIN))
    }

    /// Stops the local chief of a ParameterServerStrategy round alone, and waits up to the
    /// grace for it to exit, before anything else stops or the node leaves: a coordinator
    /// saves on SIGTERM (the guide's loop), and its variables live on the parameter servers,
    /// which must still serve, here and on every other host. A second signal cuts it short.
    async fn stop_chief_first(
        &self,
        tasks: &mut Supervisor,
        chief: usize,
        signal: Signal,
        stop: &mut (impl Stream<Item = Signal> + Unpin),
    ) {
        tracing::info!(grace = ?self.options.grace, "stopping the chief first: it saves while the parameter servers serve");
        tasks.signal_task(chief, signal);
        let until_exit = async {
            while let Some((index, _)) = tasks.next_exit().await {
                if index == chief {
                    return;
                }
            }
        };
        tokio::select! {
            _ = tokio::time::timeout(self.options.grace, until_exit) => {}
            _ = next_signal(stop) => {}
        }
    }

    /// Local task `local`'s environment in `round` ([`round_task_env`]), with the notice
    /// file's path when the agent follows the cloud's notices.
    fn task_env(
        &self,
        round: &Round,
        local: u32,
        gpus: &TaskGpus,
        restarts: u32,
    ) -> Result<Vec<(String, String)>, Error> {
        let mut env = round_task_env(round, local, gpus, restarts)?;
        if let Some(file) = self.notice_file.get() {
            let path = file.path().to_string_lossy().into_owned();
            env.push((departure::NOTICE_FILE.to_owned(), path));
        }
        Ok(env)
    }

    /// Starts local task `local` of `round` (restarted in place `restarts` times in it),
    /// warm when its interpreter is ready, and records it in `local_of`; a task that cannot
    /// start is reported as failed (ending the round, or restarted as any failure).
    // What a start needs, each borrowed apart (the supervisor and the pool across rounds).
    #[allow(clippy::too_many_arguments)]
    async fn start_local(
        &self,
        tasks: &mut Supervisor,
        warm: &mut WarmPool,
        node: &Node,
        round: &Round,
        local: u32,
        gpus: &TaskGpus,
        restarts: u32,
        local_of: &mut Vec<u32>,
    ) -> Result<(), AgentError> {
        let task = &round.local_tasks()[local as usize];
        let log = self.options.task_logs.as_ref().map(|logs| {
            logs.task(
                self.options.join.rdzv_id(),
                round.number(),
                &task.task.job,
                task.task.task,
            )
            .with_header(format!(
                "# tfcluster: {} on {}, round {}",
                task.task,
                node.host(),
                round.number()
            ))
        });
        let spec = TaskSpec {
            name: task.name_on(node.host()),
            argv: self.options.command.clone(),
            env: self.task_env(round, local, gpus, restarts)?,
            log,
        };
        match warm.start_task(tasks, local, spec).await {
            Ok(_) => local_of.push(local),
            Err(e) => {
                // Reported as the task's failure: the round ends for every node, and the
                // job's story says why.
                let e = Chain(&e).to_string();
                tracing::error!(local_task = local, error = %e, "cannot start a local task");
                let status = TaskStatus::Error(e);
                self.client
                    .report(node, round.number(), local, status, "")
                    .await?;
            }
        }
        Ok(())
    }
}

/// Kills the running local chief of `round` (`local_of`: each started process's local
/// task) for a parameter server's restart: a chief to start again once its exit comes, with
/// `restarts` in-place restarts; `None` when no chief runs here.
fn restart_chief(
    tasks: &mut Supervisor,
    round: &Round,
    local_of: &[u32],
    restarts: u32,
) -> Option<(u32, u32)> {
    let chief = round
        .local_tasks()
        .iter()
        .position(|t| t.task.job == "chief")? as u32;
    let running = local_of.iter().rposition(|&l| l == chief)?;
    tracing::warn!(
        "a parameter server failed: restarting the chief too (it restores the variables from \
         its checkpoint)"
    );
    tasks.kill(running);
    Some((chief, restarts))
}

/// How long before its deadline a host running a parameter server leaves at the latest,
/// waiting for the chief to save: time to stop its tasks and leave.
const SERVER_MARGIN: Duration = Duration::from_secs(10);

/// Whether two notices are one departure, its deadline perhaps restated.
fn same_departure(a: &crate::HostNotice, b: &crate::HostNotice) -> bool {
    (&a.cloud, &a.kind, &a.detail) == (&b.cloud, &b.kind, &b.detail)
}

/// Sleeps until `at`; never without one.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The supervisor's index of the local chief, while it runs, when `round` is
/// ParameterServerStrategy's (it has parameter servers).
fn pss_chief(tasks: &Supervisor, round: &Round, local_of: &[u32]) -> Option<usize> {
    if round.config().strategy() != Strategy::ParameterServer {
        return None;
    }
    let chief = round
        .local_tasks()
        .iter()
        .position(|t| t.task.job == "chief")? as u32;
    let index = local_of.iter().rposition(|&l| l == chief)?;
    tasks.is_running(index).then_some(index)
}

/// The port of `address` (`host:port`) held again for its task's restart, when it can be.
fn hold_port(address: &str) -> Option<ReservedPorts> {
    let port = address.rsplit_once(':')?.1.parse().ok()?;
    ReservedPorts::hold(Ipv4Addr::UNSPECIFIED.into(), &[port])
        .inspect_err(|e| tracing::debug!(port, error = %e, "cannot hold a dead task's port"))
        .ok()
}

/// Whether the heartbeats failed because the rendezvous has lost this node, or will have by
/// now (unreachable for the heartbeat timeout): the round ended for the others, and the node
/// joins again, as the rendezvous's refusal says. Exiting instead would cost the job this
/// host for a pause of a few seconds (a stalled process, a link down and up) and, where this
/// agent serves the rendezvous, the whole job. A rendezvous unreachable past the client's
/// retries fails the join again, and with it the agent.
fn lost_by_rendezvous(e: &Error) -> bool {
    matches!(e, Error::Unreachable { .. }) || e.is_not_found()
}

/// The next signal on `stop`; none ever once it ended.
async fn next_signal(stop: &mut (impl Stream<Item = Signal> + Unpin)) -> Signal {
    match stop.next().await {
        Some(signal) => signal,
        None => std::future::pending().await,
    }
}

fn done_outcome(done: JobDone) -> AgentOutcome {
    if done.succeeded {
        AgentOutcome::Succeeded(done)
    } else {
        AgentOutcome::Failed(done)
    }
}
