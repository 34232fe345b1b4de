//! A full connect (TensorFlow's `set_server_def`, `reset_context=true`): a new context id,
//! device discovery on every task, then one `CreateContext` per task with the devices its
//! filters let it see.

use std::collections::BTreeMap;
use std::sync::Arc;

use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;
use tokio::time::Instant;

use super::close::close_contexts;
use super::cluster;
use super::connection::{Connection, Member};
use super::create_request::{CreateStep, CreateTemplate};
use super::discovery::discover;
use super::fan_out::fan_out_reporting;
use super::local::{self, Local};
use super::requests::Blueprint;
use super::visible::Sent;
use super::{ConnectOptions, Deadline, Transport};
use crate::TaskId;
use crate::error::{Error, Stage};
use crate::ids::{Hex, random_nonzero_u64};

/// Connects to `spec` from scratch. `previous` lends its local server when the local task is
/// unchanged, and its filters: as in TensorFlow, a task keeps the first filters it was ever
/// given, and new filters only apply to tasks that had none. On any failure every context created so
/// far is closed and every failed task is listed.
#[tracing::instrument(
    name = "connect",
    level = "debug",
    skip_all,
    fields(local_job = %options.job_name, local_task = options.task_index, context_id)
)]
pub(crate) async fn connect(
    spec: ClusterSpec,
    default_device: Option<String>,
    options: ConnectOptions,
    previous: Option<(&Local, &ClusterDeviceFilters)>,
) -> Result<Connection, Error> {
    if options.protocol != "grpc" {
        return Err(Error::Protocol(options.protocol));
    }
    let deadline = Deadline::new(options.rpc_timeout, options.timeout, options.max_in_flight);
    let transport = Transport::of(&options);
    let mut filters = previous.map(|p| p.1.clone()).unwrap_or_default();
    if let Some(new) = &options.cluster_device_filters {
        for (job, task, list) in new.iter() {
            // TensorFlow's `SetRemoteDeviceFilters` emplaces: a task's first filters stay for
            // the life of the client, later ones for it are ignored.
            if filters.filters(job, task).is_empty() {
                filters.set_device_filters(job, task, list.iter().map(|f| f.as_str()))?;
            }
        }
    }

    // The remote tasks are the same in `spec` and in the cluster with the local job added
    // (that job holds the local task alone), so they are discovered while the local task's
    // server starts: its own device discovery (NVML's start, ~23 ms on an H100 host) takes
    // as long as discovering a few remote tasks.
    let local_task = TaskId::new(options.job_name.clone(), options.task_index);
    let tasks: Vec<_> = cluster::remote_tasks(&spec, &local_task)
        .into_iter()
        .map(|(task, address)| (task, address, ()))
        .collect();
    let total = tasks.len();
    let started = Instant::now();
    let local_start = async {
        let started_local = local::start(&spec, &options, previous.map(|p| p.0)).await?;
        let address = &started_local.0.address;
        tracing::debug!(%address, elapsed = ?started.elapsed(), "local task serving");
        Ok::<_, Error>(started_local)
    };
    let discovery = async {
        Ok(fan_out_reporting(
            tasks,
            |task, address, ()| discover(deadline.clone(), transport.clone(), task, address),
            |done, total| report(&options, Stage::Discovery, done, total),
        )
        .await)
    };
    // A local server that cannot start ends the connect at once, discovery or not.
    let ((local, full_spec), (found, failures)) = tokio::try_join!(local_start, discovery)?;
    tracing::debug!(
        tasks = total,
        failed = failures.len(),
        elapsed = ?started.elapsed(),
        "device discovery done"
    );
    if !failures.is_empty() {
        return Err(Error::Tasks {
            stage: Stage::Discovery,
            total,
            failures,
        });
    }
    let mut members: BTreeMap<_, _> = found
        .into_iter()
        .map(|(task, address, remote)| {
            let member = Member {
                address,
                remote,
                sent: Sent::none(),
            };
            (task, member)
        })
        .collect();

    let context_id = random_nonzero_u64();
    tracing::Span::current().record("context_id", tracing::field::display(Hex(context_id)));
    let added = local
        .added
        .then_some((local.task.job.as_str(), local.address.as_str()));
    let blueprint = Blueprint::new(&spec, added, &local.task.job, &filters);
    let (names, attributes) = Connection::base_devices(&members, &local);
    let index = filters.index(&names);
    let template = CreateTemplate::new(
        &blueprint.server_def(&local.task),
        &attributes,
        options.keep_alive_secs,
        context_id,
        0,
    );
    let names_sent = Arc::new(attributes.iter().map(|a| a.name.clone()).collect());
    let step = CreateStep {
        template: &template,
        filters: &filters,
        index: &index,
        names: &names_sent,
        deadline: &deadline,
        progress: options.progress.as_ref(),
    };
    let tasks: Vec<TaskId> = members.keys().cloned().collect();
    let (created, failures) = step.run(&mut members, &tasks).await;
    tracing::debug!(
        tasks = total,
        failed = failures.len(),
        elapsed = ?started.elapsed(),
        "remote contexts created"
    );
    if !failures.is_empty() {
        // Leave no half-created cluster behind.
        let undo = created
            .into_iter()
            .filter_map(|task| members.get(&task).map(|m| m.link(&task)))
            .collect();
        let cleanup = Deadline::new(
            options.rpc_timeout,
            options.rpc_timeout,
            options.max_in_flight,
        );
        let _ = close_contexts(&cleanup, context_id, 0, undo).await;
        return Err(Error::Tasks {
            stage: Stage::CreateContext,
            total,
            failures,
        });
    }
    Ok(Connection {
        context_id,
        view_id: 0,
        spec,
        full_spec,
        local,
        blueprint,
        filters,
        members,
        default_device,
        options,
    })
}

/// Tells `options.progress`, if any.
pub(crate) fn report(options: &ConnectOptions, stage: Stage, done: usize, total: usize) {
    if let Some(progress) = &options.progress {
        progress.report(stage, done, total);
    }
}
