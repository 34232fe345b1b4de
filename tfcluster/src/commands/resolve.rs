//! `tfcluster resolve`: what cluster this process is part of, found the way a TensorFlow job
//! would find it.

use serde_json::json;

use crate::args::rendezvous::RdzvSourceArgs;
use crate::args::source::{SourceArgs, SourceKind};
use crate::failure::Failure;
use crate::identity::identify;
use crate::output::emit;
use crate::runtime::runtime;

/// Find this process's cluster from its environment, as a TensorFlow job would.
///
/// `--from auto` checks, in order, TF_CONFIG, a Slurm job step (SLURM_PROCID,
/// SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), SageMaker (SM_HOSTS,
/// SM_CURRENT_HOST), Open MPI (OMPI_COMM_WORLD_*) and a Kubernetes Indexed Job
/// (JOB_COMPLETION_INDEX with TFCLUSTER_K8S_COMPLETIONS or TFCLUSTER_K8S_REPLICATED_JOBS), and
/// uses the first complete one; when none is complete the error says what each source lacks.
///
/// `--from k8s-indexed` builds an Indexed Job's cluster from the pod's environment alone (no
/// API access): task i at `<job>-<i>.<subdomain>:<port>`, this pod's task from its index (see
/// the guide's "Kubernetes Indexed Jobs" for the manifest that passes the variables down).
///
/// `--from rendezvous` asks an elastic job's rendezvous (--rdzv `HOST[:PORT]` or
/// `etcd://HOST[:PORT],...`, --rdzv-id) for its running round, as an observer: the cluster, no
/// task of this process, and as master the job's chief (else worker 0).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  srun -N2 -n4 tfcluster resolve\n  \
tfcluster resolve --from rendezvous --rdzv node0:29400 --rdzv-id job1 --format json\n  \
tfcluster resolve --from rendezvous --rdzv etcd://node0:2379 --rdzv-id job1\n  \
TF_CONFIG='{\"cluster\": {\"worker\": [\"w0:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}' tfcluster resolve --format json\n  \
eval \"$(srun -n1 tfcluster resolve --from slurm --format env)\"\n  \
tfcluster resolve --from k8s-indexed --k8s-layout chief=1 --format json   # in an Indexed Job's pod")]
pub(crate) struct Args {
    /// Where to look.
    #[arg(long, value_enum, default_value = "auto")]
    from: SourceKind,
    /// table: readable; json: one object (source, cluster, task_type, task_id, rpc_layer,
    /// master); tf-config: this task's TF_CONFIG; env: `export TF_CONFIG=...` for a shell.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    rendezvous: RdzvSourceArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
    TfConfig,
    Env,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let format = if args.json { Format::Json } else { args.format };
    let out = runtime()?.block_on(resolve(&args, format))?;
    emit(&out)
}

async fn resolve(args: &Args, format: Format) -> Result<String, Failure> {
    let found = identify(args.from, &args.source, Some(&args.rendezvous)).await?;
    Ok(match format {
        Format::Json => {
            let cluster: serde_json::Value =
                serde_json::from_str(&found.spec.to_json()).unwrap_or_default();
            let out = json!({
                "source": found.source,
                "cluster": cluster,
                "task_type": found.task_type,
                "task_id": found.task_id,
                "rpc_layer": found.rpc_layer,
                "master": found.master,
            });
            format!("{out}\n")
        }
        Format::TfConfig => format!("{}\n", found.tf_config()?),
        Format::Env => found
            .env()?
            .into_iter()
            .map(|(name, value)| format!("export {name}={}\n", shell_quote(&value)))
            .collect(),
        Format::Table => {
            let task = match (&found.task_type, found.task_id) {
                (Some(job), Some(id)) => format!("{job} {id}"),
                (Some(job), None) => format!("{job} (no index)"),
                _ => "(none)".into(),
            };
            format!(
                "source:    {}\ncluster:   {}\ntask:      {task}\nrpc_layer: {}\nmaster:    {}\n",
                found.source,
                found.spec,
                found.rpc_layer.as_deref().unwrap_or("(none)"),
                if found.master.is_empty() {
                    "(none)"
                } else {
                    &found.master
                },
            )
        }
    })
}

/// `value` in single quotes for a POSIX shell.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}
