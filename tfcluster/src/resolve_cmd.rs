//! `tfcluster resolve`: what cluster this process is part of, found the way a TensorFlow job
//! would find it.

use cluster_resolver::{
    ClusterResolver, ClusterSource, Env, SlurmClusterResolver, detect, format_master_url,
    tf_config_for,
};
use serde_json::json;

use crate::args::{Failure, runtime};
use crate::cluster_arg::{From, SourceArgs, resolver};
use crate::output::emit;

/// Find this process's cluster from its environment, as a TensorFlow job would.
///
/// `--from auto` checks, in order, TF_CONFIG, a Slurm job step (SLURM_PROCID,
/// SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), SageMaker (SM_HOSTS,
/// SM_CURRENT_HOST) and Open MPI (OMPI_COMM_WORLD_*), and uses the first complete one; when
/// none is complete the error says what each source lacks.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  srun -N2 -n4 tfcluster resolve\n  \
TF_CONFIG='{\"cluster\": {\"worker\": [\"w0:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}' tfcluster resolve --format json\n  \
eval \"$(srun -n1 tfcluster resolve --from slurm --format env)\"")]
pub(crate) struct Args {
    /// Where to look.
    #[arg(long, value_enum, default_value = "auto")]
    from: From,
    /// table: readable; json: one object (source, cluster, task_type, task_id, rpc_layer,
    /// master); tf-config: this task's TF_CONFIG; env: `export TF_CONFIG=...` for a shell.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    #[command(flatten)]
    source: SourceArgs,
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
    let out = runtime()?.block_on(resolve(args.from, &args.source, format))?;
    emit(&out)
}

async fn resolve(from: From, source_args: &SourceArgs, format: Format) -> Result<String, Failure> {
    let invalid = |e: cluster_resolver::Error| Failure::Input(e.to_string());
    let detected = match from {
        From::Auto => Some(detect(&Env::process()).map_err(invalid)?),
        From::TfConfig => Some(ClusterSource::TfConfig),
        From::Slurm => Some(ClusterSource::Slurm),
        From::Sagemaker => Some(ClusterSource::SageMaker),
        From::File => None,
        #[cfg(feature = "kubernetes")]
        From::Kubernetes => Some(ClusterSource::Kubernetes),
        #[cfg(feature = "gce")]
        From::Gce | From::Tpu => None,
    };
    let source = match detected {
        Some(source) => source.to_string(),
        None => match from {
            From::File => format!("file {}", source_args.file.as_deref().unwrap_or("")),
            other => format!("{other:?}"),
        },
    };
    let found = if detected == Some(ClusterSource::Slurm) {
        slurm()?
    } else {
        let resolver: Box<dyn ClusterResolver> = resolver(from, source_args).await?;
        Found {
            spec: resolver.cluster_spec().await.map_err(invalid)?,
            task_type: resolver.task_type(),
            task_id: resolver.task_id(),
            master: resolver.master(None, None, None).await.map_err(invalid)?,
            rpc_layer: resolver.rpc_layer(),
            cuda_visible_devices: None,
        }
    };
    let Found {
        spec,
        task_type,
        task_id,
        master,
        rpc_layer,
        cuda_visible_devices,
    } = found;
    let tf_config = || match (&task_type, task_id) {
        (Some(job), Some(id)) => {
            tf_config_for(&spec, job, id, rpc_layer.as_deref()).map_err(invalid)
        }
        _ => Err(Failure::Input(format!(
            "{source} names no task of this process, so there is no TF_CONFIG to write"
        ))),
    };
    Ok(match format {
        Format::Json => {
            let cluster: serde_json::Value =
                serde_json::from_str(&spec.to_json()).unwrap_or_default();
            let out = json!({
                "source": source,
                "cluster": cluster,
                "task_type": task_type,
                "task_id": task_id,
                "rpc_layer": rpc_layer,
                "master": master,
            });
            format!("{out}\n")
        }
        Format::TfConfig => format!("{}\n", tf_config()?),
        Format::Env => {
            let mut out = format!("export TF_CONFIG={}\n", shell_quote(&tf_config()?));
            if let Some(devices) = cuda_visible_devices {
                out.push_str(&format!(
                    "export CUDA_VISIBLE_DEVICES={}\n",
                    shell_quote(&devices)
                ));
            }
            out
        }
        Format::Table => {
            let task = match (task_type, task_id) {
                (Some(job), Some(id)) => format!("{job} {id}"),
                (Some(job), None) => format!("{job} (no index)"),
                _ => "(none)".into(),
            };
            format!(
                "source:    {source}\ncluster:   {spec}\ntask:      {task}\nrpc_layer: {}\nmaster:    {}\n",
                rpc_layer.as_deref().unwrap_or("(none)"),
                if master.is_empty() { "(none)" } else { &master },
            )
        }
    })
}

/// What `resolve` reports.
struct Found {
    spec: cluster_spec::ClusterSpec,
    task_type: Option<String>,
    task_id: Option<u32>,
    master: String,
    rpc_layer: Option<String>,
    /// This task's GPUs, where the source decides them (Slurm).
    cuda_visible_devices: Option<String>,
}

/// A Slurm step, resolved once: the resolver's accessors each resolve the step again, which
/// for millions of tasks is seconds each.
fn slurm() -> Result<Found, Failure> {
    let resolver = SlurmClusterResolver::new(Env::process());
    let step = resolver
        .resolve()
        .map_err(|e| Failure::Input(e.to_string()))?;
    let rpc_layer = resolver.rpc_layer();
    Ok(Found {
        master: format_master_url(&step.address(), rpc_layer.as_deref()),
        task_type: Some(step.task_type().to_owned()),
        task_id: Some(step.task_id()),
        cuda_visible_devices: step.cuda_visible_devices().map(str::to_owned),
        rpc_layer,
        spec: step.into_spec(),
    })
}

/// `value` in single quotes for a POSIX shell.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}
