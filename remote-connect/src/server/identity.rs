//! Which task a remote context makes this server: TensorFlow's worker adopts the job and
//! task index of the `ServerDef` a client sends (`SessionMgr::CreateSession`), after checking
//! that the cluster names it.

use cluster_proto::ServerDef;
use cluster_spec::ClusterSpec;
use tonic::Status;

/// The name a context gives this server's devices: `/job:J/replica:R/task:T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) job: String,
    pub(crate) replica: u32,
    pub(crate) task: u32,
}

/// The identity a request's `ServerDef` gives this server, or `own` when the request carries
/// no cluster (TensorFlow then keeps the server's own name).
pub(crate) fn adopt(def: Option<ServerDef>, own: &Identity) -> Result<Identity, Status> {
    let Some(def) = def else {
        return Ok(own.clone());
    };
    let cluster = def.cluster.unwrap_or_default();
    if cluster.job.is_empty() {
        return Ok(own.clone());
    }
    if def.job_name.is_empty() {
        return Err(Status::invalid_argument(
            "ServerDef.job_name must not be empty when ServerDef.cluster is set",
        ));
    }
    let task = u32::try_from(def.task_index).map_err(|_| {
        Status::invalid_argument(format!(
            "ServerDef.task_index must not be negative, got {}",
            def.task_index
        ))
    })?;
    let replica = u32::try_from(def.replica).map_err(|_| {
        Status::invalid_argument(format!(
            "ServerDef.replica must not be negative, got {}",
            def.replica
        ))
    })?;
    let spec = ClusterSpec::try_from(cluster)
        .map_err(|e| Status::invalid_argument(format!("invalid ServerDef.cluster: {e}")))?;
    if spec.task_address(&def.job_name, task).is_err() {
        // TensorFlow's GrpcServer finds no address for itself and fails with this INTERNAL.
        return Err(Status::internal(
            "Could not parse port for local server from \"\"",
        ));
    }
    Ok(Identity {
        job: def.job_name,
        replica,
        task,
    })
}
