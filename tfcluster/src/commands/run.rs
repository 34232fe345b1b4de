//! `tfcluster run`: start a TensorFlow program with the TF_CONFIG of its task, or a whole
//! cluster of them on this machine (`--local`), or this host's share of an elastic job
//! (`--rdzv`).

use serde_json::json;

use crate::args::elastic::ElasticArgs;
use crate::args::gpus::GpuArgs;
use crate::args::metrics::MetricsArgs;
use crate::args::prewarm::PrewarmArgs;
use crate::args::restarts::RestartArgs;
use crate::args::source::{SourceArgs, SourceKind};
use crate::args::stops::StopArgs;
use crate::args::task_logs::TaskLogArgs;
use crate::args::watchdog::WatchdogArgs;
use crate::failure::Failure;
use crate::output::emit;
use crate::run::elastic::Supervision;
use crate::run::local_jobs::LocalJobs;
use crate::run::{elastic, local, one};
use crate::runtime::runtime;

/// Run a TensorFlow program with the TF_CONFIG of its task, found as `resolve` finds it (a
/// Slurm step, TF_CONFIG, SageMaker, a file, …), or a whole cluster of it on this machine.
///
/// One task (the default): the cluster and this process's task are resolved first (an error
/// stops here, before anything runs); CMD then runs with TF_CONFIG set, and under Slurm with
/// the CUDA_VISIBLE_DEVICES the resolver computed for the rank. CMD's output passes through
/// untouched, SIGINT and SIGTERM are passed on to it (it runs in a process group of its own),
/// and its exit status is this command's (128 + the signal if a signal ended it).
///
/// `--local JOB=COUNT,...`: every task of the cluster as a child process, each on its own free
/// port of 127.0.0.1 with its own TF_CONFIG, each line of its output behind `[job:index]`,
/// and on a host with GPUs its share of them as CUDA_VISIBLE_DEVICES (split evenly, or
/// `--gpus-per-task`), so the tasks do not all take every GPU. The job succeeds when the chief (or worker 0 without a chief) exits 0 and no other task
/// failed; the others then have `--grace` to exit on their own and are stopped after it
/// (ParameterServerStrategy's servers run until stopped; that is no failure). A failed task
/// is restarted alone, in place (same address and TF_CONFIG, TFCLUSTER_RESTART_COUNT one
/// higher), where TensorFlow survives that (`--restart-scope`): a ParameterServerStrategy
/// worker or chief, a parameter server with the chief, an evaluator; at most
/// `--max-task-restarts` times each, and a crash loop (the same traceback twice without
/// progress) stops the job. Any other failure (a MultiWorkerMirroredStrategy worker) fails
/// the job: the others are killed (SIGKILL, or SIGTERM and SIGKILL after `--failure-grace`)
/// and the error names it (exit status 1). SIGINT or SIGTERM stops every task the same way (exit status 128 + the
/// signal; a second signal kills at once). Python's output is unbuffered unless
/// PYTHONUNBUFFERED is set, so lines come as they are printed, and Python's faulthandler is
/// armed (PYTHONFAULTHANDLER=1) unless PYTHONFAULTHANDLER is set, so a task that crashes or
/// hangs (`--watchdog`) prints every thread's stack. With `--watchdog DUR`, a task that shows
/// no progress for DUR is hung: the error names it as hung, with its stack.
///
/// `--rdzv HOST[:PORT]`: this host's share of an elastic job. Run it on every host; the
/// agents meet at the rendezvous (the agent on HOST serves it when nothing answers there, or
/// run `tfcluster rendezvous serve`; over mTLS with `--rdzv-tls-ca`, `--rdzv-tls-cert` and
/// `--rdzv-tls-key` on every host, the serving agent's certificate naming HOST; the serving
/// agent admits only `--rdzv-allow`'s networks when given), which groups them into rounds of MIN to MAX hosts
/// (`--nodes`). While a round forms, each host says what it waits for (hosts joined of
/// MIN:MAX, the last call, the `--join-timeout`): a spinner on a terminal, else a line
/// within about a second, on each change and every 30 s. Each round, each host runs `--tasks-per-node` tasks of CMD, each on a free
/// port with its TF_CONFIG and TFCLUSTER_ROUND, TFCLUSTER_RESTART_COUNT,
/// TFCLUSTER_NODE_RANK, TFCLUSTER_LOCAL_TASK, and on a host with GPUs its share of them as
/// CUDA_VISIBLE_DEVICES (split evenly, or `--gpus-per-task`); output lines are behind
/// `[host/job:index]`. A failed task is restarted alone, in place, where TensorFlow's
/// strategy survives that (`--restart-scope`, as with --local; counted per task in
/// TFCLUSTER_RESTART_COUNT and `tfcluster status`). Any other failed task (a hung one too,
/// with `--watchdog`: reported as hung, its stack in the stderr tail), a task past
/// `--max-task-restarts`, or a lost host, ends the round on every host: all tasks are
/// killed (SIGKILL, or SIGTERM first and SIGKILL after `--failure-grace`) and
/// started again in the next round, up to `--max-restarts` times; then the job fails (exit status 1, naming
/// the first failure: task, host, status, the end of its stderr; written as JSON to
/// `--error-file`). A crash loop (the same failure on two hosts, or twice on one without
/// progress) fails the job at once, naming it (`--allow-crash-loops` goes on). A task that
/// exits 42 or 143 (PreemptionCheckpointHandler saved first) is a planned restart, counted
/// against nothing. A host joining below MAX ends the round too, and the next one includes
/// it; that is no failure and counts as no restart, and its tasks are stopped cleanly
/// (SIGTERM, SIGKILL after `--grace`), so PreemptionCheckpointHandler can save first. The job succeeds when the chief (or
/// worker 0) exits 0 (exit status 0). Restarts are warm when CMD is a Python program: each
/// local task has an interpreter that imported TensorFlow (`--prewarm`) before its round,
/// handed the round's environment when it forms (TFCLUSTER_WARM, its start time, tells a
/// task); a script that does not exist is python's error before joining (exit status 2). With --dry-run, the agents form the first round (so
/// every host must run it) and print its environment.
///
/// `--rdzv etcd://HOST[:PORT],...`: the same job, its rendezvous kept in an etcd cluster
/// (v3 API; the list names its members' client endpoints, port 2379 by default). No agent
/// serves anything and every agent is equal: the job survives the loss of any host, those
/// of etcd's members included while a majority of the members lives (a lost agent's lease
/// runs out after `--rdzv-timeout` and the others go on in a new round). An etcd that
/// cannot be reached for `--rdzv-timeout` fails the agent, naming the endpoints. TLS to
/// etcd: `--rdzv-tls-ca` (and `--rdzv-tls-cert` with `--rdzv-tls-key` where etcd checks
/// clients). `--rdzv-backend` says which rendezvous --rdzv names when its form does not.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
srun -N3 -n3 tfcluster run --from slurm -- python train.py\n  \
tfcluster run --local worker=2 -- python mwms_train.py\n  \
tfcluster run --local chief=1,worker=2,ps=1 --grace 5s -- python pss_train.py\n  \
tfcluster run --from file --file cluster.json --job worker --task 1 -- python train.py\n  \
tfcluster run --dry-run --format json
  tfcluster run --rdzv node0 --nodes 2 --tasks-per-node 2 -- python mwms_train.py   # on node0 and node1
  tfcluster run --rdzv node0:29400 --nodes 2:4 --layout chief=1,ps=2 --max-restarts 3 \\
      --error-file /tmp/error.json -- python pss_train.py
  tfcluster run --rdzv etcd://node0:2379,node1:2379,node2:2379 --nodes 2:3 --rdzv-id job1 \\
      -- python mwms_train.py   # on each host; any one of them may be lost
  tfcluster run --rdzv node0 --nodes 2 --metrics 0.0.0.0:9400 -- python train.py   # scrape HOST:9400/metrics
  tfcluster run --rdzv etcd://etcd0:2379 --rdzv-tls-ca ca.pem --rdzv-tls-cert me.pem \\
      --rdzv-tls-key me-key.pem --nodes 2 -- python mwms_train.py
  tfcluster run --rdzv node0 --nodes 2 --log-dir /shared/logs --log-keep 3 --quiet-tasks \\
      -- python mwms_train.py   # /shared/logs/default/round-N/worker-I.out and .err")]
#[command(group = clap::ArgGroup::new("launcher").args(["local", "rdzv"]))]
// The rendezvous's timings are flattened from a group `rendezvous serve` shares: here they
// need --rdzv.
#[command(group = clap::ArgGroup::new("rdzv_timing")
    .args(["rdzv_timeout", "rdzv_last_call"])
    .multiple(true)
    .requires("rdzv"))]
pub(crate) struct Args {
    /// Where to find the cluster and this task.
    #[arg(long, value_enum, default_value = "auto", conflicts_with_all = ["local", "rdzv"])]
    from: SourceKind,
    #[command(flatten)]
    source: SourceArgs,
    /// This process's job, when the source names none (a bare cluster file) or to override it.
    #[arg(long, conflicts_with_all = ["local", "rdzv"])]
    job: Option<String>,
    /// This process's task index, when the source names none or to override it.
    #[arg(long, conflicts_with_all = ["local", "rdzv"])]
    task: Option<u32>,
    /// Run the whole cluster here: JOB=COUNT pairs, e.g. `chief=1,worker=2,ps=1`.
    #[arg(long, value_name = "JOBS", conflicts_with = "rdzv")]
    local: Option<LocalJobs>,
    #[command(flatten)]
    elastic: ElasticArgs,
    #[command(flatten)]
    gpus: GpuArgs,
    #[command(flatten)]
    stops: StopArgs,
    #[command(flatten)]
    watchdog: WatchdogArgs,
    #[command(flatten)]
    restarts: RestartArgs,
    #[command(flatten)]
    prewarm: PrewarmArgs,
    #[command(flatten)]
    task_logs: TaskLogArgs,
    // With --rdzv: healthy while the agent is in its job; with --local, while tasks run.
    #[command(flatten)]
    metrics: MetricsArgs,
    /// Print the environment CMD would get instead of running it.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: env, `NAME=VALUE` lines (each behind `[job:index]` with --local); or
    /// json, one object {"tasks": [{"task", "env"}], "command"}.
    #[arg(long, value_enum, default_value = "env")]
    format: Format,
    /// The program to run and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD", required_unless_present = "dry_run")]
    command: Vec<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Env,
    Json,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    runtime()?.block_on(launch(args))
}

/// Runs the command as the flags say: elastic (`--rdzv`), local (`--local`) or one task;
/// with --dry-run, prints the environments instead.
async fn launch(args: Args) -> Result<(), Failure> {
    let gpus_per_task = args.gpus.gpus_per_task;
    if let Some(addr) = args.metrics.metrics
        && (args.dry_run || (args.elastic.target.rdzv.is_none() && args.local.is_none()))
    {
        return Err(anyhow::anyhow!(
            "--metrics {addr} serves the metrics of a job run with --rdzv or --local, not \
             of a single task or a --dry-run"
        )
        .into());
    }
    if args.elastic.target.rdzv.is_some() {
        if args.dry_run {
            let tasks = elastic::dry_run(
                &args.elastic,
                gpus_per_task,
                args.restarts.policy(),
                &args.command,
            )
            .await?;
            return emit(&render(&tasks, &args.command, args.format));
        }
        let supervision = Supervision {
            stops: args.stops,
            watchdog: args.watchdog,
            restarts: args.restarts.policy(),
            prewarm: args.prewarm.prewarm(),
            task_logs: args.task_logs.logs()?,
            metrics: ::elastic::AgentMetrics::default(),
            // Watched once the agent's runtime runs (`elastic::run`).
            notices: None,
        };
        return elastic::run(
            &args.elastic,
            gpus_per_task,
            &args.command,
            supervision,
            args.metrics,
        )
        .await;
    }
    if let Some(jobs) = &args.local {
        if args.dry_run {
            let (spec, _reserved) = jobs.cluster().map_err(anyhow::Error::msg)?;
            let tasks = local::task_envs(jobs, &spec, gpus_per_task)
                .await?
                .into_iter()
                .map(|(task, env)| (task.short_name(), env))
                .collect::<Vec<_>>();
            return emit(&render(&tasks, &args.command, args.format));
        }
        let options = local::LocalOptions {
            stops: args.stops,
            gpus_per_task,
            watchdog: args.watchdog,
            restarts: args.restarts.policy(),
            logs: args.task_logs.logs()?,
            metrics: args.metrics,
        };
        return local::run(jobs, &args.command, options).await;
    }
    let env = one::task_env(args.from, &args.source, args.job, args.task).await?;
    if args.dry_run {
        return emit(&render(&[(String::new(), env)], &args.command, args.format));
    }
    one::run(&args.command, env).await
}

/// The environment of each task, as `--format` asks; `task` is empty for this process's own.
fn render(tasks: &[(String, Vec<(String, String)>)], command: &[String], format: Format) -> String {
    match format {
        Format::Env => tasks
            .iter()
            .flat_map(|(task, env)| {
                env.iter().map(move |(name, value)| match task.as_str() {
                    "" => format!("{name}={value}\n"),
                    task => format!("[{task}] {name}={value}\n"),
                })
            })
            .collect(),
        Format::Json => {
            let tasks: Vec<serde_json::Value> = tasks
                .iter()
                .map(|(task, env)| {
                    let env: serde_json::Map<String, serde_json::Value> = env
                        .iter()
                        .map(|(name, value)| (name.clone(), value.clone().into()))
                        .collect();
                    match task.as_str() {
                        "" => json!({ "env": env }),
                        task => json!({ "task": task, "env": env }),
                    }
                })
                .collect();
            format!("{}\n", json!({ "tasks": tasks, "command": command }))
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use launcher::Prewarm;

    use super::*;
    use crate::args::rendezvous::target::Rendezvous;

    /// `tfcluster run` alone, as clap parses it.
    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: Args,
    }

    fn parse(flags: &[&str]) -> Result<Args, clap::Error> {
        let line = [&["run"], flags, &["--", "true"]].concat();
        Run::try_parse_from(line).map(|run| run.args)
    }

    fn rendezvous(flags: &[&str]) -> Result<Rendezvous, Failure> {
        let args = parse(flags).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        args.elastic.rendezvous().map(|r| r.expect("--rdzv given"))
    }

    #[test]
    fn rdzv_flags_name_one_rendezvous() {
        let r = rendezvous(&["--rdzv", "node0"]).unwrap();
        assert!(matches!(r, Rendezvous::BuiltIn(_, None)), "{r:?}");
        let r = rendezvous(&["--rdzv", "etcd://a,b:1", "--rdzv-timeout", "5s"]).unwrap();
        let Rendezvous::Etcd(etcd) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(etcd.endpoints(), ["a:2379", "b:1"]);
        // --rdzv-timeout is the lease's TTL and the job's timeout, --rdzv-last-call its.
        let debug = format!("{etcd:?}");
        assert!(
            debug.contains("timeout: 5s") && debug.contains("last_call: 3s"),
            "{debug}"
        );
        let r = rendezvous(&["--rdzv-backend", "etcd", "--rdzv", "h1:2379,h2:2379"]).unwrap();
        assert_eq!(r.to_string(), "etcd://h1:2379,h2:2379");
        assert!(parse(&["--rdzv", "x", "--rdzv-backend", "built-in"]).is_ok());
    }

    #[test]
    fn contradicting_rdzv_flags_are_usage_errors() {
        let failure = rendezvous(&["--rdzv-backend", "built-in", "--rdzv", "etcd://a"])
            .expect_err("contradicts");
        assert_eq!(failure.code, 2);
        let message = failure.error.unwrap().to_string();
        assert!(
            message.contains("--rdzv-backend built-in") && message.contains("etcd://a:2379"),
            "{message}"
        );
        let failure = rendezvous(&["--rdzv", "node0", "--rdzv-tls-ca", "/ca.pem"])
            .expect_err("no TLS to the built-in rendezvous without this agent's certificate");
        assert_eq!(failure.code, 2);
    }

    #[test]
    fn prewarm_defaults_to_tensorflow_and_its_flags_exclude_each_other() {
        let prewarm = |flags: &[&str]| parse(flags).map(|args| args.prewarm.prewarm());
        assert_eq!(prewarm(&["--rdzv", "n"]).unwrap(), Prewarm::Default);
        assert_eq!(
            prewarm(&["--rdzv", "n", "--no-prewarm"]).unwrap(),
            Prewarm::Off
        );
        let modules = vec!["numpy".to_owned(), "tensorflow".to_owned()];
        let chosen = prewarm(&["--rdzv", "n", "--prewarm", "numpy,tensorflow"]).unwrap();
        assert_eq!(chosen, Prewarm::Modules(modules));
        let both = prewarm(&["--rdzv", "n", "--prewarm", "numpy", "--no-prewarm"]);
        assert!(both.is_err_and(|e| e.to_string().contains("cannot be used with")));
    }

    #[test]
    fn clap_refuses_rdzv_flags_without_their_partners() {
        for flags in [
            &["--rdzv-backend", "etcd"][..],
            &["--rdzv-tls-ca", "/ca.pem"],
            &["--rdzv", "etcd://a", "--rdzv-tls-cert", "/c.pem"],
            &["--rdzv", "etcd://a", "--rdzv-tls-key", "/k.pem"],
            &[
                "--rdzv",
                "etcd://a",
                "--rdzv-tls-cert",
                "/c",
                "--rdzv-tls-key",
                "/k",
            ],
            &["--rdzv", "etcd://a", "--rdzv-backend", "zookeeper"],
        ] {
            assert!(parse(flags).is_err(), "{flags:?} parsed");
        }
        let err = parse(&["--rdzv", "etcd://a:0"]).err().unwrap().to_string();
        assert!(
            err.contains("--rdzv") && err.contains("invalid etcd endpoint \"a:0\""),
            "{err}"
        );
    }
}
