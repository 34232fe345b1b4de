//! The cluster a context connects to: the user's spec, with or without this process's job.

use cluster_spec::ClusterSpec;

/// `spec` without job `drop` (when given) and with job `add` = `{0: address}` appended (when
/// given).
pub(crate) fn edit(
    spec: &ClusterSpec,
    drop: Option<&str>,
    add: Option<(&str, &str)>,
) -> Result<ClusterSpec, cluster_spec::Error> {
    let mut builder = ClusterSpec::builder();
    for job in spec.jobs() {
        if Some(job) != drop {
            builder = builder.sparse_job(job, spec.tasks(job)?);
        }
    }
    if let Some((job, address)) = add {
        builder = builder.job(job, [address]);
    }
    builder.build()
}

/// Every task of `spec` but `local`, jobs sorted by name and tasks ascending (TensorFlow's
/// `ListWorkers` order), with their addresses.
pub(crate) fn remote_tasks(
    spec: &ClusterSpec,
    local: &crate::TaskId,
) -> Vec<(crate::TaskId, String)> {
    let mut jobs = spec.jobs();
    jobs.sort_unstable();
    let mut tasks = Vec::with_capacity(spec.total_tasks());
    for job in jobs {
        // Jobs come from the spec itself, so `tasks` cannot fail.
        for (task, address) in spec.tasks(job).into_iter().flatten() {
            if job != local.job || task != local.task {
                tasks.push((crate::TaskId::new(job, task), address.to_owned()));
            }
        }
    }
    tasks
}

/// TensorFlow's change detection in `connect_to_cluster`: the new connect only updates the
/// current context when the local job and task are unchanged and the cluster is unchanged,
/// comparing the current cluster without the local job whenever the new spec lacks that job
/// (it was added by the client). Anything else resets the context.
pub(crate) fn is_update(
    current_cluster: &ClusterSpec,
    current_local: &crate::TaskId,
    new_spec: &ClusterSpec,
    new_local: &crate::TaskId,
) -> bool {
    if current_local != new_local {
        return false;
    }
    if new_spec.has_job(&new_local.job) {
        return current_cluster == new_spec;
    }
    match edit(current_cluster, Some(&new_local.job), None) {
        Ok(current) => current == *new_spec,
        Err(_) => false,
    }
}
