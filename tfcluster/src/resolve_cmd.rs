//! `tfcluster resolve`: what cluster this process is part of, found the way a TensorFlow job
//! would find it.

use cluster_resolver::{Env, auto_detect, detect};
use serde_json::json;

use crate::args::Failure;

const HELP: &str = "\
tfcluster resolve — find this process's cluster from its environment

USAGE:
    tfcluster resolve [--json]

Checks, in order, TF_CONFIG, a Slurm job step (SLURM_PROCID, SLURM_STEP_NUM_TASKS,
SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), SageMaker (SM_HOSTS, SM_CURRENT_HOST) and
Open MPI (OMPI_COMM_WORLD_*), and prints the first complete one: the cluster, this task and
the master address. When none is complete the error says what each source lacks.

Run it under the launcher to see what a job there would see, e.g.
    srun -N2 -n4 tfcluster resolve
    TF_CONFIG='{\"cluster\": {\"worker\": [\"w0:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}' tfcluster resolve

OPTIONS:
    --json    one JSON object: source, cluster (TF_CONFIG shape), task_type, task_id,
              rpc_layer, master
";

pub(crate) fn run(args: &[String]) -> Result<(), Failure> {
    let mut as_json = false;
    for arg in args {
        match arg.as_str() {
            "--help" | "-h" => {
                print!("{HELP}");
                return Ok(());
            }
            "--json" => as_json = true,
            other => {
                return Err(Failure::Usage(format!(
                    "resolve: unexpected argument {other:?}"
                )));
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the async runtime: {e}")))?;
    let output = runtime
        .block_on(resolve(as_json))
        .map_err(|e| Failure::Input(e.to_string()))?;
    print!("{output}");
    Ok(())
}

async fn resolve(as_json: bool) -> Result<String, cluster_resolver::Error> {
    let env = Env::process();
    let source = detect(&env)?;
    let resolver = auto_detect(&env).await?;
    let spec = resolver.cluster_spec().await?;
    let (task_type, task_id) = (resolver.task_type(), resolver.task_id());
    let master = resolver.master(None, None, None).await?;
    let rpc_layer = resolver.rpc_layer();
    if as_json {
        let cluster: serde_json::Value =
            serde_json::from_str(&spec.to_json()).expect("to_json writes valid JSON");
        let out = json!({
            "source": source.to_string(),
            "cluster": cluster,
            "task_type": task_type,
            "task_id": task_id,
            "rpc_layer": rpc_layer,
            "master": master,
        });
        return Ok(format!("{out}\n"));
    }
    let task = match (task_type, task_id) {
        (Some(job), Some(id)) => format!("{job} {id}"),
        (Some(job), None) => format!("{job} (no index)"),
        _ => "(none)".into(),
    };
    Ok(format!(
        "source:    {source}\ncluster:   {spec}\ntask:      {task}\nrpc_layer: {}\nmaster:    {}\n",
        rpc_layer.as_deref().unwrap_or("(none)"),
        if master.is_empty() { "(none)" } else { &master },
    ))
}
