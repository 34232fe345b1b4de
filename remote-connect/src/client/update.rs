//! Updating a connected context in place (TensorFlow's `update_server_def`,
//! `reset_context=false`): handles stay valid, replaced tasks are found and given the context
//! again, and every task's view advances by one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cluster_proto::eager::KeepAliveRequest;
use cluster_spec::ClusterSpec;

use super::close::close_contexts;
use super::cluster;
use super::cluster_change::Moves;
use super::connection::{Connection, Member, TaskLink};
use super::create_request::{CreateStep, CreateTemplate};
use super::discovery::discover;
use super::fan_out::fan_out;
use super::requests::Blueprint;
use super::visible::{Sent, Visible};
use super::{ConnectOptions, Deadline, Transport};
use crate::TaskId;
use crate::error::{Error, Stage, TaskFailure};
use crate::ids::Hex;

/// Brings `connection` to `spec` (the local task unchanged) as TensorFlow's
/// `UpdateContextWithServerDef` does:
///
/// 1. `KeepAlive` to every task in both clusters; one that fails or answers another view id
///    is *replaced* (treated as removed and added again);
/// 2. `GetStatus` to the added tasks (while step 1 runs: it cannot change them) and the
///    replaced ones;
/// 3. if every discovery succeeded, `CreateContext` at view + 1 on them;
/// 4. `UpdateContext` at view + 1 on the others: full (server def and devices) when a device
///    it may see belongs to an added, removed or replaced task, else simplified;
/// 5. `CloseContext` at the old view on removed and replaced tasks (a replaced task's new
///    context has a higher view and ignores it).
///
/// The view advances even when some steps fail, as in TensorFlow; every failure is reported.
/// With [`OnDiscoveryFailure::Abort`] a failed step 2 fails the update instead, before any
/// task was changed.
/// Device filters are not changed by an update (TensorFlow warns and ignores new ones).
///
/// Steps 1 to 4 build the new state aside from `current`, which is never changed: the caller
/// swaps the returned connection in, then runs the returned [`Closing`] (step 5) without
/// holding its lock. Dropping this future leaves `current` as it was (tasks already moved to
/// the next view are found again by the next update: their `KeepAlive` answers another view).
#[tracing::instrument(
    name = "update",
    level = "debug",
    skip_all,
    fields(context_id = %Hex(current.context_id), view = current.view_id + 1)
)]
pub(crate) async fn update(
    current: &Connection,
    spec: ClusterSpec,
    options: &ConnectOptions,
    discovery: OnDiscoveryFailure,
) -> Result<(Connection, Closing, Moves), Error> {
    let mut connection = current.clone();
    if options
        .cluster_device_filters
        .as_ref()
        .is_some_and(|filters| *filters != connection.filters)
    {
        tracing::warn!(
            "Device filters can only be specified when initializing the cluster. Any \
             changes in device filters are ignored when updating the server def."
        );
    }
    let deadline = Deadline::new(options.rpc_timeout, options.timeout, options.max_in_flight);
    let transport = Transport::of(options);
    let local = connection.local.clone();
    // The job we added is added again, unless the new spec already has it (the cluster as
    // `Context::cluster_spec` reports it): adding it twice would be a duplicate job.
    let add_local = local.added && !spec.has_job(&local.task.job);
    let full_spec = if add_local {
        cluster::edit(&spec, None, Some((&local.task.job, &local.address)))?
    } else {
        spec.clone()
    };
    let wanted: BTreeMap<TaskId, String> = cluster::remote_tasks(&full_spec, &local.task)
        .into_iter()
        .collect();
    let view = connection.view_id;
    let next_view = view + 1;
    let context_id = connection.context_id;
    let mut failures = Vec::new();

    // 1. Which existing tasks still hold our context at our view; meanwhile, tasks new to
    // the cluster are discovered (step 2 for them needs no KeepAlive answer).
    let existing: Vec<_> = connection
        .members
        .iter()
        .filter(|(task, m)| wanted.get(*task) == Some(&m.address))
        .map(|(task, m)| m.link(task).into_item())
        .collect();
    let keep_alives = fan_out(existing, |_, _, channel| {
        let deadline = deadline.clone();
        async move {
            let mut eager = channel.eager;
            deadline
                .run(
                    "KeepAlive",
                    eager.keep_alive(KeepAliveRequest { context_id }),
                )
                .await
        }
    });
    let discover_all = |tasks: Vec<(TaskId, String, ())>| {
        fan_out(tasks, |task, address, ()| {
            discover(deadline.clone(), transport.clone(), task, address)
        })
    };
    let new_tasks = wanted
        .iter()
        .filter(|(task, _)| !connection.members.contains_key(*task))
        .map(|(task, address)| (task.clone(), address.clone(), ()))
        .collect();
    let ((answers, lost), (mut found, mut discovery_failures)) =
        tokio::join!(keep_alives, discover_all(new_tasks));
    let mut kept: BTreeSet<TaskId> = BTreeSet::new();
    for (task, _, response) in answers {
        if response.context_view_id == view {
            kept.insert(task);
        }
    }
    // Failed KeepAlives are not errors: those tasks count as replaced.
    drop(lost);
    let changed: BTreeSet<TaskId> = connection
        .members
        .keys()
        .chain(wanted.keys())
        .filter(|task| !kept.contains(*task))
        .cloned()
        .collect();
    let moves = Moves::sort(&connection.members, &wanted, &changed);
    tracing::info!(
        added = ?moves.added,
        removed = ?moves.removed,
        replaced = ?moves.replaced,
        kept = kept.len(),
        "updating the cluster in place"
    );

    // 2. Discover the replaced tasks (the added ones were, above).
    let replaced = wanted
        .iter()
        .filter(|(task, _)| connection.members.contains_key(*task) && !kept.contains(*task))
        .map(|(task, address)| (task.clone(), address.clone(), ()))
        .collect();
    let (found_again, failed_again) = discover_all(replaced).await;
    found.extend(found_again);
    discovery_failures.extend(failed_again);
    let to_discover_total = moves.added.len() + moves.replaced.len();
    let discovery_ok = discovery_failures.is_empty();
    if !discovery_ok && discovery == OnDiscoveryFailure::Abort {
        // Nothing has changed on any task yet: KeepAlive and GetStatus only read.
        return Err(Error::Tasks {
            stage: Stage::Discovery,
            total: to_discover_total,
            failures: discovery_failures,
        });
    }
    failures.extend(discovery_failures);

    // Tasks that go away: removed from the cluster, or replaced.
    let leaving: Vec<_> = connection
        .members
        .iter()
        .filter(|(task, _)| !kept.contains(*task))
        .map(|(task, m)| m.link(task))
        .collect();
    connection.members.retain(|task, _| kept.contains(task));
    let mut added: Vec<TaskId> = Vec::new();
    for (task, address, remote) in found {
        added.push(task.clone());
        let member = Member {
            address,
            remote,
            sent: Sent::none(),
        };
        connection.members.insert(task, member);
    }

    let blueprint = Blueprint::new(
        &spec,
        add_local.then_some((local.task.job.as_str(), local.address.as_str())),
        &local.task.job,
        &connection.filters,
    );
    let (names, attributes) = Connection::base_devices(&connection.members, &local);
    let index = connection.filters.index(&names);
    let sent_names: Arc<Vec<String>> =
        Arc::new(attributes.iter().map(|a| a.name.clone()).collect());
    let device_changed: Vec<bool> = names
        .iter()
        .map(|n| {
            changed
                .iter()
                .any(|t| n.job() == Some(t.job.as_str()) && n.task() == Some(t.task))
        })
        .collect();

    // 3. New contexts on added and replaced tasks.
    if discovery_ok {
        let template = CreateTemplate::new(
            &blueprint.server_def(&local.task),
            &attributes,
            connection.options.keep_alive_secs,
            context_id,
            next_view,
        );
        let step = CreateStep {
            template: &template,
            filters: &connection.filters,
            index: &index,
            names: &sent_names,
            deadline: &deadline,
            progress: options.progress.as_ref(),
        };
        let (_, create_failures) = step.run(&mut connection.members, &added).await;
        for failure in &create_failures {
            connection.members.remove(&failure.task);
        }
        failures.extend(create_failures);
    } else {
        for task in &added {
            connection.members.remove(task);
        }
    }

    // 4. Existing tasks move to the next view.
    let mut requests = Vec::new();
    for task in &kept {
        let Some(member) = connection.members.get_mut(task) else {
            continue;
        };
        let visible = Visible::of(&connection.filters, &index, task);
        let full = device_changed
            .iter()
            .enumerate()
            .any(|(i, &changed)| changed && visible.contains(i));
        let devices = full.then(|| {
            let devices = visible
                .positions(attributes.len())
                .into_iter()
                .map(|i| attributes[i].clone())
                .collect();
            member.sent = Sent {
                names: sent_names.clone(),
                visible,
            };
            devices
        });
        let request = blueprint.update(task, context_id, next_view, devices);
        let link = member.link(task);
        requests.push((link.task, link.address, (link.channel, request)));
    }
    let (_, update_failures) = fan_out(requests, |_, _, (channel, request)| {
        let deadline = deadline.clone();
        async move {
            let mut eager = channel.eager;
            deadline
                .run("UpdateContext", eager.update_context(request))
                .await
        }
    })
    .await;
    failures.extend(update_failures);

    connection.view_id = next_view;
    connection.spec = spec;
    connection.full_spec = full_spec;
    connection.blueprint = blueprint;
    let closing = Closing {
        deadline,
        context_id,
        view,
        tasks: leaving,
        total: wanted.len(),
        failures,
    };
    Ok((connection, closing, moves))
}

/// What an update does when a task to add (or give the context again) cannot be discovered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnDiscoveryFailure {
    /// Go on without it, as TensorFlow's `update_server_def`: the others move to the next
    /// view and the failure is reported.
    Continue,
    /// Change nothing and fail: a follower stays on its last good cluster and retries.
    Abort,
}

/// Step 5 of an update, run once the new state is in place: `CloseContext` at the old view
/// on the tasks that left or were replaced, then the update's outcome.
#[derive(Debug)]
pub(crate) struct Closing {
    deadline: Deadline,
    context_id: u64,
    /// The view the leaving tasks' contexts are at.
    view: u64,
    tasks: Vec<TaskLink>,
    /// How many remote tasks the new cluster has.
    total: usize,
    /// The failures of steps 1 to 4.
    failures: Vec<TaskFailure>,
}

impl Closing {
    /// Closes the leaving tasks' contexts; every failure of the update is reported.
    pub(crate) async fn run(self) -> Result<(), Error> {
        let mut failures = self.failures;
        failures
            .extend(close_contexts(&self.deadline, self.context_id, self.view, self.tasks).await);
        if failures.is_empty() {
            Ok(())
        } else {
            Err(Error::Tasks {
                stage: Stage::Update,
                total: self.total,
                failures,
            })
        }
    }
}
