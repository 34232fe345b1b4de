//! `run --rdzv`: this host's agent of an elastic job, and the built-in rendezvous it serves
//! when it runs on the endpoint's host and nothing answers there yet (an etcd rendezvous
//! needs no serving: every agent is its client alike).

use std::io::ErrorKind;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use cluster_spec::__private::error_chain::Chain;
use elastic::{
    Agent, AgentError, AgentOptions, AgentOutcome, ClientOptions, JobDone, Join, RendezvousClient,
    RendezvousServer, Waited, task_env,
};
use elastic::{AgentMetrics, Notices, RendezvousMetrics};
use failure_policy::RestartPolicy;
use launcher::supervise::TaskLogs;
use launcher::{Prewarm, PrewarmError, hostname};
use metrics_endpoint::Health;
use metrics_endpoint::prometheus_client::registry::Registry;
use serde_json::json;

use crate::args::allow::access;
use crate::args::elastic::ElasticArgs;
use crate::args::metrics::MetricsArgs;
use crate::args::rendezvous::target::Rendezvous;
use crate::args::stops::StopArgs;
use crate::args::watchdog::WatchdogArgs;
use crate::failure::Failure;
use crate::run::waiting::Waiting;
use crate::stop_signal::{Stop, stopped};

/// The log target of this module's events, fixed rather than the module's path so that a
/// filter naming it (`RUST_LOG=tfcluster::run_rdzv=debug`, which the tests set to see whether
/// an agent won the rendezvous's bind) keeps working wherever this file moves. `run_rdzv`:
/// `run --rdzv`'s agent.
const TARGET: &str = "tfcluster::run_rdzv";

/// How long the agent that serves the rendezvous keeps serving after its own job ended, so
/// the other agents hear the end (they learn it within a round trip of it).
const LINGER: Duration = Duration::from_secs(2);

/// Runs this host's tasks of the job until it ends.
pub(crate) async fn run(
    args: &ElasticArgs,
    gpus_per_task: Option<launcher::GpusPerTask>,
    command: &[String],
    supervision: Supervision,
    metrics: MetricsArgs,
) -> Result<(), Failure> {
    let rendezvous = rendezvous_of(args)?;
    let logs = supervision.task_logs.clone();
    // Caught from here: a signal while the agent starts, joins or waits stops it too.
    let mut stop = Stop::install();
    let agent_metrics = supervision.metrics.clone();
    // Kept for the agent's life: dropping it stops the watch.
    let (watcher, notices) = args.preemption.watch().unzip();
    let supervision = Supervision {
        notices,
        ..supervision
    };
    let agent = agent(&rendezvous, args, gpus_per_task, command, supervision).await?;
    // Before serving: a host that cannot give its tasks their GPUs fails at once.
    agent.task_gpus().await?;
    let rendezvous_metrics = RendezvousMetrics::default();
    let server = serve_if_here(&rendezvous, args, &rendezvous_metrics).await?;
    let mut registry = Registry::default();
    agent_metrics.register(&mut registry);
    if server.is_some() {
        rendezvous_metrics.register(&mut registry);
    }
    // Healthy while the agent is in its job: joined, waiting for or running a round.
    let health = Health::from_fn(move || agent_metrics.is_joined());
    let _serving = metrics.serve(registry, health).await?;
    let outcome = agent.run(&mut stop).await;
    if let Some(server) = server {
        // Still caught: a signal cuts the linger short. An agent a signal stopped does not
        // linger: its user asked it to go (it exits within a second), and the other agents
        // find the rendezvous gone as they would two seconds later.
        if !matches!(outcome, Ok(AgentOutcome::Stopped(_))) {
            let _ = tokio::time::timeout(LINGER, stop.next()).await;
        }
        server.shutdown().await;
    }
    match outcome {
        Ok(AgentOutcome::Succeeded(done)) => {
            tracing::info!(target: TARGET, round = done.round, detail = %done.detail, "the job succeeded");
            Ok(())
        }
        Ok(AgentOutcome::Failed(done)) => {
            let log = failed_log(logs.as_ref(), args, &done);
            write_error_file(args, &failure_json(args, &done, log.as_deref()))?;
            Err(anyhow!(failure_message(&done, log.as_deref())).into())
        }
        Ok(AgentOutcome::Stopped(signal)) => Err(stopped(signal, "every local task")),
        Ok(AgentOutcome::Departed(notice)) => {
            // Planned: the job goes on without this host. The cloud may go ahead now
            // (Azure's approval), rather than at its deadline.
            if let Some(watcher) = &watcher {
                match watcher.acknowledge(&notice).await {
                    Ok(true) => {
                        tracing::info!(target: TARGET, %notice, "told the cloud this host is ready")
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(target: TARGET, error = %e, "cannot tell the cloud this host is ready")
                    }
                }
            }
            eprintln!("tfcluster: left the job ahead of the cloud's notice: {notice}");
            Ok(())
        }
        Ok(other) => Err(anyhow!("the job ended: {other:?}").into()),
        Err(e) => {
            let message = Chain(&e).to_string();
            write_error_file(
                args,
                &json!({ "rdzv_id": args.target.rdzv_id(), "error": message }),
            )?;
            // A script that does not exist: python's message and its status.
            let code = match e {
                AgentError::Prewarm(PrewarmError::NoScript { .. }) => 2,
                _ => 1,
            };
            if refused_token(&e) {
                // Not retried: another try carries the same token.
                let context = format!(
                    "the rendezvous refused this host's token for job {:?}: every host of the \
                     job needs the same --rdzv-token-file or TFCLUSTER_RDZV_TOKEN",
                    args.target.rdzv_id()
                );
                return Err(Failure::new(anyhow::Error::new(e).context(context), code));
            }
            Err(Failure::new(e, code))
        }
    }
}

/// Whether `e` is the rendezvous refusing the token (`UNAUTHENTICATED`).
fn refused_token(e: &AgentError) -> bool {
    matches!(e, AgentError::Rendezvous(error) if error.is_token_refused())
}

/// `--dry-run`: joins, waits for the first round (so every host must run it), and returns
/// each local task's name and environment (with its `CUDA_VISIBLE_DEVICES`).
pub(crate) async fn dry_run(
    args: &ElasticArgs,
    gpus_per_task: Option<launcher::GpusPerTask>,
    restarts: RestartPolicy,
    command: &[String],
) -> Result<Vec<(String, Vec<(String, String)>)>, Failure> {
    let rendezvous = rendezvous_of(args)?;
    let stops = StopArgs {
        grace: Duration::ZERO,
        failure_grace: Duration::ZERO,
    };
    // Nothing runs: nothing to watch, keep warm or log.
    let supervision = Supervision {
        stops,
        watchdog: WatchdogArgs {
            watchdog: None,
            watchdog_start: Duration::ZERO,
        },
        // The job's config, which every host must agree on, holds it.
        restarts,
        prewarm: Prewarm::Off,
        task_logs: None,
        metrics: AgentMetrics::default(),
        notices: None,
    };
    let agent = agent(&rendezvous, args, gpus_per_task, command, supervision).await?;
    let gpus = agent.task_gpus().await?.clone();
    let server = serve_if_here(&rendezvous, args, &RendezvousMetrics::default()).await?;
    let waited = agent.first_round().await;
    if let Some(server) = server {
        tokio::time::sleep(LINGER).await;
        server.shutdown().await;
    }
    let round = match waited? {
        Waited::Round(round) => round,
        other => return Err(anyhow!("no round: {other:?}").into()),
    };
    round
        .local_tasks()
        .iter()
        .enumerate()
        .map(|(local, task)| {
            let env = task_env(&round, local as u32, &gpus)?;
            let host = &round.members()[round.rank() as usize].host;
            Ok((task.name_on(host), env))
        })
        .collect()
}

fn rendezvous_of(args: &ElasticArgs) -> Result<Rendezvous, Failure> {
    args.rendezvous()?
        .ok_or_else(|| anyhow!("--rdzv is required").into())
}

/// The client of the rendezvous, whichever backend: its deadlines from `--rdzv-timeout`, so
/// a rendezvous unreachable (every etcd member, or the built-in one's host) for that long
/// fails the agent, naming it.
async fn client(rendezvous: &Rendezvous, args: &ElasticArgs) -> Result<RendezvousClient, Failure> {
    let timeout = args.timing.timeout();
    let options = ClientOptions::default()
        .with_connect_timeout((timeout / 3).min(Duration::from_secs(5)))
        .with_rpc_timeout(timeout.min(Duration::from_secs(10)))
        .with_retry_for(timeout);
    let options = args.target.client_options(options, Some(rendezvous))?;
    rendezvous.client(options).await
}

/// The agent of this host, its tasks stopped as `stops` say and watched by `watchdog`.
async fn agent(
    rendezvous: &Rendezvous,
    args: &ElasticArgs,
    gpus_per_task: Option<launcher::GpusPerTask>,
    command: &[String],
    supervision: Supervision,
) -> Result<Agent, Failure> {
    let Supervision {
        stops,
        watchdog,
        restarts,
        prewarm,
        task_logs,
        metrics,
        notices,
    } = supervision;
    let client = client(rendezvous, args).await?;
    let config = args.config()?.with_restarts(restarts);
    if let Some(warning) = restarts.scope.warning(config.strategy()) {
        tracing::warn!("{warning}");
    }
    let mut join =
        Join::new(args.target.rdzv_id().to_owned(), config, Vec::new()).with_name(hostname());
    if let Some(host) = &args.host {
        join = join.with_host(host.clone());
    }
    Ok(Agent::new(
        client,
        AgentOptions::new(join, command.to_vec())
            .with_grace(stops.grace)
            .with_failure_grace(stops.failure_grace)
            .with_join_timeout(args.join_timeout)
            .with_gpus_per_task(gpus_per_task)
            .with_watchdog(watchdog.watchdog)
            .with_watchdog_start(watchdog.watchdog_start)
            .with_prewarm(prewarm)
            .with_task_logs(task_logs)
            .with_metrics(metrics)
            .with_notices(notices)
            .with_health_check(args.bad_hosts.health_check())
            .with_wait_watcher(std::sync::Arc::new(Waiting::new(
                &rendezvous.to_string(),
                args.target.rdzv_id(),
            ))),
    ))
}

/// How the agent supervises its tasks: how it stops them, finds hung ones, keeps them warm.
pub(crate) struct Supervision {
    pub(crate) stops: StopArgs,
    pub(crate) watchdog: WatchdogArgs,
    /// What a failure restarts: part of the job's config.
    pub(crate) restarts: RestartPolicy,
    pub(crate) prewarm: Prewarm,
    pub(crate) task_logs: Option<TaskLogs>,
    /// What the agent counts (`--metrics`).
    pub(crate) metrics: AgentMetrics,
    /// The cloud's notices for this host (`--preemption-notices`), once watched.
    pub(crate) notices: Option<Notices>,
}

/// Serves the built-in rendezvous on its endpoint when that is an address of this host and
/// free, over mTLS with the agent's `--rdzv-tls-*` config, behind `--rdzv-allow`, and with
/// the job's token as the server's own (as `rendezvous serve --token-file`): a caller without
/// it can create, join or list nothing there, whichever job id it names. The agent that wins
/// the bind serves, the others (and every other host) are clients. On etcd, nothing.
async fn serve_if_here(
    rendezvous: &Rendezvous,
    args: &ElasticArgs,
    metrics: &RendezvousMetrics,
) -> Result<Option<RendezvousServer>, Failure> {
    let Rendezvous::BuiltIn(endpoint, tls) = rendezvous else {
        return Ok(None);
    };
    let Some(addr) = tokio::net::lookup_host(endpoint.to_string())
        .await
        .ok()
        .and_then(|mut addrs| addrs.next())
    else {
        return Ok(None);
    };
    let mut options = RendezvousServer::builder()
        .with_timeout(args.timing.timeout())
        .with_last_call(args.timing.last_call())
        .with_metrics(metrics.clone());
    if let Some(token) = args.target.token()? {
        options = options.with_token(token);
    }
    options = options.with_access(access(args.rdzv_allow.as_deref(), tls.clone()));
    Ok(match options.with_bind(addr).start().await {
        Ok(server) => {
            tracing::info!(target: TARGET, %addr, "serving the rendezvous");
            Some(server)
        }
        Err(elastic::Error::Bind { source, .. })
            if matches!(
                source.kind(),
                ErrorKind::AddrInUse | ErrorKind::AddrNotAvailable
            ) =>
        {
            tracing::debug!(target: TARGET, %addr, error = %source, "not serving the rendezvous here");
            None
        }
        Err(e) => {
            tracing::warn!(target: TARGET, %addr, error = %Chain(&e), "cannot serve the rendezvous here; joining it");
            None
        }
    })
}

/// With `--log-dir`, the stderr file of a failed job's first failure: the same path on the
/// failed task's host, whose agent wrote it.
fn failed_log(
    logs: Option<&TaskLogs>,
    args: &ElasticArgs,
    done: &JobDone,
) -> Option<std::path::PathBuf> {
    let (logs, first) = (logs?, done.first_failure.as_ref()?);
    let task = logs.task(args.target.rdzv_id(), first.round, &first.job, first.index);
    Some(task.err().to_owned())
}

/// A failed job's message: what ended it, the first failure, its log file and its stderr
/// tail.
fn failure_message(done: &JobDone, log: Option<&std::path::Path>) -> String {
    let mut message = done.to_string();
    if let (Some(log), Some(first)) = (log, &done.first_failure) {
        message.push_str(&format!("\nits log: {} on {}", log.display(), first.host));
    }
    if let Some(first) = &done.first_failure
        && !first.stderr_tail.is_empty()
    {
        message.push_str("\nits stderr ended with:\n");
        message.push_str(first.stderr_tail.trim_end());
    }
    message
}

/// The `--error-file` record of a failed job.
fn failure_json(
    args: &ElasticArgs,
    done: &JobDone,
    log: Option<&std::path::Path>,
) -> serde_json::Value {
    let first = done.first_failure.as_ref().map(|f| {
        json!({
            "task": format!("{}:{}", f.job, f.index),
            "job": f.job,
            "index": f.index,
            "host": f.host,
            "name": f.name,
            "node_id": f.node_id,
            "local_task": f.local_task,
            "round": f.round,
            "status": f.status.to_string(),
            "stderr_tail": f.stderr_tail,
            "log_file": log.map(|l| l.display().to_string()),
        })
    });
    json!({
        "rdzv_id": args.target.rdzv_id(),
        "round": done.round,
        "error": done.to_string(),
        "first_failure": first,
    })
}

fn write_error_file(args: &ElasticArgs, record: &serde_json::Value) -> Result<(), Failure> {
    let Some(path) = &args.error_file else {
        return Ok(());
    };
    // Never through a symlink, and made 0600: the record holds the end of a task's stderr.
    launcher::private_file::create(path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, format!("{record}\n").as_bytes()))
        .with_context(|| format!("cannot write --error-file {}", path.display()))
        .map_err(Failure::from)
}
