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

/// What a request's `ServerDef` says this server is, with its cluster already decoded:
/// `cluster` is `None` when the request carries no cluster.
pub(crate) struct Claim {
    pub(crate) cluster: Option<Result<ClusterSpec, cluster_spec::Error>>,
    pub(crate) job_name: String,
    pub(crate) task_index: i32,
    pub(crate) replica: i32,
}

impl From<ServerDef> for Claim {
    fn from(def: ServerDef) -> Self {
        let cluster = def.cluster.filter(|c| !c.job.is_empty());
        Self {
            cluster: cluster.map(ClusterSpec::try_from),
            job_name: def.job_name,
            task_index: def.task_index,
            replica: def.replica,
        }
    }
}

/// The identity a request's `ServerDef` gives this server, or `own` when the request carries
/// no cluster (TensorFlow then keeps the server's own name).
pub(crate) fn adopt(claim: Option<Claim>, own: &Identity) -> Result<Identity, Status> {
    let Some(Claim {
        cluster: Some(cluster),
        job_name,
        task_index,
        replica,
    }) = claim
    else {
        return Ok(own.clone());
    };
    if job_name.is_empty() {
        return Err(Status::invalid_argument(
            "ServerDef.job_name must not be empty when ServerDef.cluster is set",
        ));
    }
    let task = u32::try_from(task_index).map_err(|_| {
        Status::invalid_argument(format!(
            "ServerDef.task_index must not be negative, got {task_index}"
        ))
    })?;
    let replica = u32::try_from(replica).map_err(|_| {
        Status::invalid_argument(format!(
            "ServerDef.replica must not be negative, got {replica}"
        ))
    })?;
    let spec =
        cluster.map_err(|e| Status::invalid_argument(format!("invalid ServerDef.cluster: {e}")))?;
    if spec.task_address(&job_name, task).is_err() {
        // TensorFlow's GrpcServer finds no address for itself and fails with this INTERNAL.
        return Err(Status::internal(
            "Could not parse port for local server from \"\"",
        ));
    }
    Ok(Identity {
        job: job_name,
        replica,
        task,
    })
}
