//! This process's own task: its server binds first, and the port it got is what the cluster
//! advertises (TensorFlow picks a port, then binds it later, and can lose it to a race).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use cluster_spec::ClusterSpec;

use super::ConnectOptions;
use super::cluster;
use crate::error::Error;
use crate::server::port_of;
use crate::{RunningServer, TaskId, TaskServer, TaskServerBuilder};

/// This process's task in a connected cluster.
#[derive(Clone, Debug)]
pub(crate) struct Local {
    pub(crate) task: TaskId,
    /// Whether the job was added to the user's spec (TensorFlow's auto-added `localhost`).
    pub(crate) added: bool,
    /// The address the cluster advertises for it.
    pub(crate) address: String,
    /// Shared with the connection it replaces when a reconnect keeps the same local task.
    pub(crate) server: Arc<RunningServer>,
}

/// Starts (or keeps, when `previous` is the same task) the local task's server; returns it with
/// the cluster including it.
pub(crate) async fn start(
    spec: &ClusterSpec,
    options: &ConnectOptions,
    previous: Option<&Local>,
) -> Result<(Local, ClusterSpec), Error> {
    let task = TaskId::new(options.job_name.clone(), options.task_index);
    let added = !spec.has_job(&task.job);
    if let Some(previous) = previous.filter(|p| p.task == task) {
        // The same task keeps its server when the new cluster can be served by it: an added
        // job takes whatever port it has; a job in the spec must name that port.
        let bound = previous.server.local_addr();
        let wanted = spec.task_address(&task.job, task.task).ok();
        let same_port = wanted.is_some_and(|a| port_of(a) == bound.port());
        let same_bind = options.local_bind.is_none_or(|b| b == bound);
        if same_bind && (added || same_port) {
            let kept = Local {
                task,
                added,
                address: match wanted {
                    Some(address) if !added => address.to_owned(),
                    _ => format!("localhost:{}", bound.port()),
                },
                server: previous.server.clone(),
            };
            let full = full_spec(spec, &kept)?;
            return Ok((kept, full));
        }
    }
    let local = if added {
        if task.task != 0 {
            return Err(Error::LocalTaskMissing {
                job: task.job,
                task: task.task,
            });
        }
        let bind = options
            .local_bind
            .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        let placeholder = cluster::edit(
            &ClusterSpec::empty(),
            None,
            Some((&task.job, "localhost:0")),
        )?;
        let server = secured(TaskServer::builder(placeholder, &task.job, 0), options)
            .with_bind(bind)
            .start()
            .await?;
        Local {
            address: format!("localhost:{}", server.local_addr().port()),
            task,
            added,
            server: Arc::new(server),
        }
    } else {
        let address = spec
            .task_address(&task.job, task.task)
            .map_err(|_| Error::LocalTaskMissing {
                job: task.job.clone(),
                task: task.task,
            })?
            .to_owned();
        let mut builder = secured(
            TaskServer::builder(spec.clone(), &task.job, task.task),
            options,
        );
        if let Some(bind) = options.local_bind {
            builder = builder.with_bind(bind);
        }
        let server = builder.start().await?;
        Local {
            task,
            added,
            address,
            server: Arc::new(server),
        }
    };
    let full = full_spec(spec, &local)?;
    Ok((local, full))
}

/// The local task is a task of the cluster like the others: served under the same TLS.
fn secured(builder: TaskServerBuilder, options: &ConnectOptions) -> TaskServerBuilder {
    #[cfg(feature = "tls")]
    if let Some(tls) = &options.tls {
        return builder.with_access(grpc_guard::Access::default().with_tls(tls.clone()));
    }
    #[cfg(not(feature = "tls"))]
    let _ = options;
    builder
}

fn full_spec(spec: &ClusterSpec, local: &Local) -> Result<ClusterSpec, Error> {
    if local.added {
        Ok(cluster::edit(
            spec,
            None,
            Some((&local.task.job, &local.address)),
        )?)
    } else {
        Ok(spec.clone())
    }
}
