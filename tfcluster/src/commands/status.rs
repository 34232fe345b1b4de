//! `tfcluster status`: an elastic job's state at its rendezvous in one screen (its round and
//! members with their tasks, restarts against the limit, waiting and late hosts, the last
//! failure), as text or JSON, once or again on each change (`--watch`, a long poll at the
//! rendezvous); without `--rdzv-id`, the jobs the rendezvous holds.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use elastic::{
    ClientOptions, JobPhase, JobStatus, JobSummary, NodeState, RendezvousClient, TaskStatus,
};
use serde_json::{Value, json};

use crate::args::rendezvous::target::Rendezvous;
use crate::args::rendezvous::{RdzvTargetArgs, StatusRole};
use crate::failure::Failure;
use crate::output::emit;
use crate::report::plain;
use crate::runtime::runtime;
use crate::stop_signal::Stop;

/// How long one `--watch` call may wait at the rendezvous for a change.
const POLL: Duration = Duration::from_secs(10);

/// Lines of a failure's stderr tail the text form shows (JSON has the whole tail).
const STDERR_LINES: usize = 5;

/// Show an elastic job's state at its rendezvous: its round, members and their tasks,
/// restarts against --max-restarts, waiting and late hosts, the last failure. Without
/// --rdzv-id, list the jobs the rendezvous holds. Changes nothing at the rendezvous.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
tfcluster status --rdzv node0:29400                        # the jobs node0's rendezvous holds\n  \
tfcluster status --rdzv node0:29400 --rdzv-id job1         # job1 in one screen\n  \
tfcluster status --rdzv node0 --rdzv-id job1 --watch       # again at each change\n  \
tfcluster status --rdzv etcd://e1,e2,e3 --rdzv-id job1 --format json\n\n\
A host is late when the rendezvous has not heard from it for half the heartbeat timeout \
(agents call every third of it): it is lost, and its round ended, at the whole timeout.")]
pub(crate) struct Args {
    #[command(flatten)]
    target: RdzvTargetArgs<StatusRole>,
    /// Output form: `text` (one screen), or `json` (one object; with --watch, one per line).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Show the state again each time it changes (the rendezvous answers a long poll at the
    /// change; nothing is polled), until the job is done, gone, or SIGINT.
    #[arg(long)]
    watch: bool,
    /// How long an unreachable rendezvous is retried before the command fails.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

/// Output form of `status`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let rendezvous = args.target.rendezvous()?.ok_or_else(|| {
        Failure::usage(anyhow!(
            "status needs --rdzv HOST[:PORT] or --rdzv etcd://HOST[:PORT],..."
        ))
    })?;
    runtime()?.block_on(async move {
        let options = ClientOptions::default()
            .with_retry_for(args.timeout)
            .with_connect_timeout(args.timeout.min(Duration::from_secs(5)));
        let options = args.target.client_options(options, None)?;
        let client = rendezvous.client(options).await?;
        let Some(rdzv_id) = args.target.given_id() else {
            let jobs = client
                .list_jobs()
                .await
                .with_context(|| format!("cannot list the jobs at {rendezvous}"))?;
            return emit(&match args.format {
                Format::Text => list_text(&rendezvous, &jobs),
                Format::Json => format!("{}\n", list_json(&jobs)),
            });
        };
        let show = Show {
            rendezvous: &rendezvous,
            format: args.format,
            watch: args.watch,
            clear: args.watch && args.format == Format::Text && std::io::stdout().is_terminal(),
        };
        tokio::select! {
            shown = show.follow(&client, rdzv_id) => shown,
            () = Stop::install().wait() => Ok(()),
        }
    })
}

/// How the states of one job are shown.
struct Show<'a> {
    rendezvous: &'a Rendezvous,
    format: Format,
    watch: bool,
    /// Clear the terminal before each state (a terminal with --watch).
    clear: bool,
}

impl Show<'_> {
    /// Shows job `rdzv_id`, and with --watch, each change until it is done or gone.
    async fn follow(&self, client: &RendezvousClient, rdzv_id: &str) -> Result<(), Failure> {
        let mut after = None;
        loop {
            let status = match client.job_status(rdzv_id, after, POLL).await {
                Ok(status) => status,
                Err(e) if e.is_not_found() && after.is_some() => {
                    eprintln!(
                        "job {rdzv_id:?} is gone from {}: every host left",
                        self.rendezvous
                    );
                    return Ok(());
                }
                Err(e) if e.is_not_found() => {
                    return Err(self.unknown(client, rdzv_id).await);
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!(
                            "cannot read job {rdzv_id:?} at {}",
                            self.rendezvous
                        ))
                        .into());
                }
            };
            if after != Some(status.digest) {
                self.print(&status)?;
            }
            if !self.watch || matches!(status.phase, JobPhase::Done(_)) {
                return Ok(());
            }
            after = Some(status.digest);
        }
    }

    fn print(&self, status: &JobStatus) -> Result<(), Failure> {
        match self.format {
            Format::Json => emit(&format!("{}\n", status_json(self.rendezvous, status))),
            Format::Text => {
                let text = status_text(self.rendezvous, status);
                if self.clear {
                    // Home and clear, so each change redraws the screen.
                    emit(&format!("\x1b[H\x1b[2J{text}"))
                } else if self.watch {
                    emit(&format!("{text}\n"))
                } else {
                    emit(&text)
                }
            }
        }
    }

    /// The error for a job the rendezvous does not have, naming the ones it has.
    async fn unknown(&self, client: &RendezvousClient, rdzv_id: &str) -> Failure {
        let known = match client.list_jobs().await {
            Ok(jobs) if jobs.is_empty() => "it holds no job this token opens".to_owned(),
            Ok(jobs) => format!(
                "it holds {}",
                jobs.iter()
                    .map(|j| format!("{:?} ({})", j.rdzv_id, j.state))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => format!("and its jobs cannot be listed: {e}"),
        };
        anyhow!(
            "no job {rdzv_id:?} at {}: {known} (--rdzv-id names the job as `run --rdzv-id` did)",
            self.rendezvous
        )
        .into()
    }
}

/// A duration to the tenth of a second, as people read it (`2.3s`).
fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// The one-screen form of `status`.
fn status_text(rendezvous: &Rendezvous, status: &JobStatus) -> String {
    let config = &status.config;
    let mut out = String::new();
    let phase = match &status.phase {
        JobPhase::Forming { detail, .. } => format!("forming: {detail}"),
        JobPhase::Running(round) => format!("running round {}", round.number()),
        JobPhase::Done(done) => done.to_string(),
        _ => "in a phase this version does not know".to_owned(),
    };
    let _ = writeln!(out, "job {:?} at {rendezvous}: {phase}", status.rdzv_id);
    let _ = writeln!(
        out,
        "  restarts {} of max {}, {} rounds formed; hosts {} of {}, {} tasks each; heartbeat \
         timeout {}",
        status.restart_count,
        config.max_restarts(),
        status.rounds_formed,
        status.nodes.len(),
        config.nodes(),
        config.tasks_per_node(),
        secs(status.heartbeat_timeout)
    );
    if !status.nodes.is_empty() {
        let mut table = plain(["RANK", "NODE", "NAME", "HOST", "TASKS", "LAST HEARD"]);
        for node in &status.nodes {
            let (rank, tasks) = match (node.state, &status.phase) {
                (NodeState::Member { rank }, JobPhase::Running(round)) => {
                    let tasks: Vec<String> = round
                        .tasks()
                        .iter()
                        .filter(|t| t.node_rank == rank)
                        .map(|t| format!("{} {}", t.task.short_name(), t.address))
                        .collect();
                    (rank.to_string(), tasks.join(", "))
                }
                (NodeState::Waiting(for_), _) => ("-".into(), format!("waiting {}", secs(for_))),
                (NodeState::Idle, _) => ("-".into(), "idle: its round ended".into()),
                _ => ("-".into(), String::new()),
            };
            let heard = if node.late {
                format!("{} ago, LATE", secs(node.silent))
            } else {
                format!("{} ago", secs(node.silent))
            };
            table.add_row([
                rank,
                node.node_id.clone(),
                node.name.clone(),
                node.host.clone(),
                tasks,
                heard,
            ]);
        }
        for line in table.to_string().lines() {
            let _ = writeln!(out, "  {}", line.trim_end());
        }
    }
    if !status.task_restarts.is_empty() {
        let _ = writeln!(
            out,
            "  tasks restarted in place this round ({}, at most {} failures each):",
            config.restarts().scope,
            config.restarts().max_task_restarts
        );
        for t in &status.task_restarts {
            let _ = writeln!(
                out,
                "    {}:{}: {} restarts ({} counted), last: {}",
                t.job, t.index, t.restarts, t.failures, t.last_failure.status
            );
        }
    }
    let churn = &status.churn;
    if churn.ends > 0 {
        let _ = write!(
            out,
            "  membership: hosts joining or leaving ended {} rounds of a budget of {} (one \
             more each {})",
            churn.ends,
            churn.budget,
            secs(churn.refill)
        );
        let _ = match churn.wait {
            Some(wait) => writeln!(out, "; a joining host waits up to {}", secs(wait)),
            None => writeln!(out),
        };
    }
    for node in &status.nodes {
        let Some(notice) = &node.notice else { continue };
        let what = if notice.is_departure() {
            "leaving before the deadline"
        } else {
            "staying"
        };
        let _ = writeln!(
            out,
            "  host {} ({}): {notice}; {what}",
            node.host, node.node_id
        );
    }
    for aside in &status.hosts_aside {
        let _ = writeln!(
            out,
            "  host {} set aside for {} more: {}",
            aside.host,
            secs(aside.remaining),
            aside.reason
        );
    }
    if let Some(failure) = &status.last_failure {
        let _ = writeln!(out, "  last failure: {failure}");
        let lines: Vec<&str> = failure.stderr_tail.lines().collect();
        for line in &lines[lines.len().saturating_sub(STDERR_LINES)..] {
            let _ = writeln!(out, "    | {line}");
        }
    }
    if let Some(end) = &status.last_end {
        let _ = writeln!(out, "  last round end: {end}");
    }
    out
}

/// The JSON form of `status`.
fn status_json(rendezvous: &Rendezvous, status: &JobStatus) -> Value {
    let config = &status.config;
    let (round, members, cluster, pending, done) = match &status.phase {
        JobPhase::Running(round) => {
            let members: Vec<Value> = round
                .members()
                .iter()
                .enumerate()
                .map(|(rank, m)| {
                    let tasks: Vec<Value> = round
                        .tasks()
                        .iter()
                        .filter(|t| t.node_rank as usize == rank)
                        .map(|t| {
                            json!({
                                "task": t.task.short_name(),
                                "job": t.task.job,
                                "index": t.task.task,
                                "address": t.address,
                            })
                        })
                        .collect();
                    json!({
                        "rank": rank,
                        "node_id": m.node_id,
                        "name": m.name,
                        "host": m.host,
                        "tasks": tasks,
                    })
                })
                .collect();
            let cluster: Value =
                serde_json::from_str(&round.cluster_spec().to_json()).unwrap_or(Value::Null);
            (
                json!(round.number()),
                json!(members),
                cluster,
                Value::Null,
                Value::Null,
            )
        }
        JobPhase::Forming {
            round,
            waiting,
            detail,
        } => (
            Value::Null,
            json!([]),
            Value::Null,
            json!({ "round": round, "waiting": waiting, "detail": detail }),
            Value::Null,
        ),
        JobPhase::Done(d) => (
            Value::Null,
            json!([]),
            Value::Null,
            Value::Null,
            json!({ "succeeded": d.succeeded, "round": d.round, "detail": d.detail }),
        ),
        _ => (
            Value::Null,
            json!([]),
            Value::Null,
            Value::Null,
            Value::Null,
        ),
    };
    let nodes: Vec<Value> = status
        .nodes
        .iter()
        .map(|n| {
            let (state, rank, waiting) = match n.state {
                NodeState::Member { rank } => ("member", json!(rank), Value::Null),
                NodeState::Waiting(for_) => ("waiting", Value::Null, json!(for_.as_secs_f64())),
                NodeState::Idle => ("idle", Value::Null, Value::Null),
                _ => ("unknown", Value::Null, Value::Null),
            };
            json!({
                "node_id": n.node_id,
                "name": n.name,
                "host": n.host,
                "ports": n.ports,
                "state": state,
                "rank": rank,
                "waiting_s": waiting,
                "silent_s": n.silent.as_secs_f64(),
                "late": n.late,
                "notice": n.notice.as_ref().map(|notice| json!({
                    "cloud": notice.cloud,
                    "kind": notice.kind,
                    "deadline_in_s": notice.remaining.map(|r| r.as_secs_f64()),
                    "detail": notice.detail,
                })),
            })
        })
        .collect();
    let ids = |pick: fn(&elastic::NodeStatus) -> bool| -> Vec<&str> {
        status
            .nodes
            .iter()
            .filter(|n| pick(n))
            .map(|n| n.node_id.as_str())
            .collect()
    };
    let last_failure = status.last_failure.as_ref().map(failure_json);
    let task_restarts: Vec<Value> = status
        .task_restarts
        .iter()
        .map(|t| {
            json!({
                "task": format!("{}:{}", t.job, t.index),
                "job": t.job,
                "index": t.index,
                "restarts": t.restarts,
                "failures": t.failures,
                "last_failure": failure_json(&t.last_failure),
            })
        })
        .collect();
    let last_end = status.last_end.as_ref().map(|e| {
        json!({
            "round": e.round,
            "reason": e.reason.as_str(),
            "detail": e.detail,
            "restart_count": e.restart_count,
        })
    });
    json!({
        "rendezvous": rendezvous.to_string(),
        "rdzv_id": status.rdzv_id,
        "job": status.job,
        "state": status.phase.state().as_str(),
        "round": round,
        "rounds_formed": status.rounds_formed,
        "restart_count": status.restart_count,
        "max_restarts": config.max_restarts(),
        "restart_scope": config.restarts().scope.as_str(),
        "max_task_restarts": config.restarts().max_task_restarts,
        "min_nodes": config.nodes().min(),
        "max_nodes": config.nodes().max(),
        "tasks_per_node": config.tasks_per_node(),
        "heartbeat_timeout_s": status.heartbeat_timeout.as_secs_f64(),
        "members": members,
        "cluster": cluster,
        "pending": pending,
        "done": done,
        "nodes": nodes,
        "waiting": ids(|n| matches!(n.state, NodeState::Waiting(_))),
        "late": ids(|n| n.late),
        "last_failure": last_failure,
        "task_restarts": task_restarts,
        "hosts_aside": status
            .hosts_aside
            .iter()
            .map(|a| {
                json!({
                    "host": a.host,
                    "remaining_s": a.remaining.as_secs_f64(),
                    "times": a.times,
                    "reason": a.reason,
                })
            })
            .collect::<Vec<_>>(),
        "churn": json!({
            "ends": status.churn.ends,
            "budget": status.churn.budget,
            "refill_s": status.churn.refill.as_secs_f64(),
            "wait_s": status.churn.wait.map(|w| w.as_secs_f64()),
        }),
        "last_end": last_end,
        "digest": status.digest.to_string(),
    })
}

/// A failure as `status --format json` writes it.
fn failure_json(f: &elastic::Failure) -> Value {
    let (exit_code, signal) = match &f.status {
        TaskStatus::Exited(code) => (json!(code), Value::Null),
        TaskStatus::Signaled(signal) => (Value::Null, json!(signal)),
        _ => (Value::Null, Value::Null),
    };
    json!({
        "round": f.round,
        "task": format!("{}:{}", f.job, f.index),
        "job": f.job,
        "index": f.index,
        "node_id": f.node_id,
        "name": f.name,
        "host": f.host,
        "local_task": f.local_task,
        "status": f.status.to_string(),
        "exit_code": exit_code,
        "signal": signal,
        "stderr_tail": f.stderr_tail,
    })
}

/// The jobs of a rendezvous, a line each.
fn list_text(rendezvous: &Rendezvous, jobs: &[JobSummary]) -> String {
    if jobs.is_empty() {
        return format!("{rendezvous} holds no job this token opens\n");
    }
    let mut table = plain(["JOB", "STATE", "ROUND", "HOSTS", "RESTARTS"]);
    for job in jobs {
        table.add_row([
            job.rdzv_id.clone(),
            job.state.to_string(),
            job.round.to_string(),
            job.nodes.to_string(),
            format!("{} of {}", job.restart_count, job.max_restarts),
        ]);
    }
    let mut out = String::new();
    for line in table.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The JSON form of the list: `{"jobs": [...]}`.
fn list_json(jobs: &[JobSummary]) -> Value {
    let jobs: Vec<Value> = jobs
        .iter()
        .map(|j| {
            json!({
                "rdzv_id": j.rdzv_id,
                "state": j.state.as_str(),
                "round": j.round,
                "nodes": j.nodes,
                "restart_count": j.restart_count,
                "max_restarts": j.max_restarts,
            })
        })
        .collect();
    json!({ "jobs": jobs })
}
