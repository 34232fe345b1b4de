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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::TaskId;

    type Jobs = Vec<(String, Vec<String>)>;

    fn build(jobs: &Jobs) -> ClusterSpec {
        let mut builder = ClusterSpec::builder();
        for (job, addresses) in jobs {
            builder = builder.job(job, addresses.clone());
        }
        builder.build().unwrap()
    }

    /// 1 to 3 distinct jobs of 1 to 4 tasks, each on its own address.
    fn jobs() -> impl Strategy<Value = Jobs> {
        proptest::sample::subsequence(vec!["chief", "evaluator", "ps", "worker"], 1..=3)
            .prop_flat_map(|names| {
                let sizes = proptest::collection::vec(1usize..=4, names.len());
                (Just(names), sizes)
            })
            .prop_map(|(names, sizes)| {
                names
                    .into_iter()
                    .zip(sizes)
                    .map(|(job, n)| {
                        let addresses = (0..n).map(|t| format!("{job}-{t}:2222")).collect();
                        (job.to_owned(), addresses)
                    })
                    .collect()
            })
    }

    /// The cluster a connect to `spec` holds: with `localhost` added (`Some`) or with the
    /// local task one of the spec's own (`None`).
    fn connected(spec: &ClusterSpec, added: bool) -> (ClusterSpec, TaskId) {
        if added {
            let full = edit(spec, None, Some(("localhost", "localhost:5555"))).unwrap();
            (full, TaskId::new("localhost", 0))
        } else {
            let job = spec.jobs()[0].to_owned();
            (spec.clone(), TaskId::new(job, 0))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_same_spec_is_an_update(jobs in jobs(), added in any::<bool>()) {
            let spec = build(&jobs);
            let (full, local) = connected(&spec, added);
            prop_assert!(is_update(&full, &local, &spec, &local));
            // The cluster as the context reports it (our job included) is the same cluster.
            prop_assert!(is_update(&full, &local, &full, &local));
        }

        #[test]
        fn a_changed_address_or_an_extra_task_is_a_reset(
            jobs in jobs(),
            added in any::<bool>(),
            pick in any::<proptest::sample::Index>(),
            extra in any::<bool>(),
        ) {
            let spec = build(&jobs);
            let (full, local) = connected(&spec, added);
            let mut changed = jobs.clone();
            let j = pick.index(changed.len());
            let (job, addresses) = &mut changed[j];
            if extra {
                addresses.push(format!("{job}-extra:2222"));
            } else {
                let t = pick.index(addresses.len());
                addresses[t] = format!("{job}-{t}:3333");
            }
            let changed = build(&changed);
            prop_assert!(!is_update(&full, &local, &changed, &local));
            // Also when the new spec names our job itself.
            let (changed_full, _) = connected(&changed, added);
            prop_assert!(!is_update(&full, &local, &changed_full, &local));
        }

        #[test]
        fn a_changed_local_task_is_a_reset(jobs in jobs(), added in any::<bool>()) {
            let spec = build(&jobs);
            let (full, local) = connected(&spec, added);
            let other_task = TaskId::new(local.job.clone(), local.task + 1);
            prop_assert!(!is_update(&full, &local, &spec, &other_task));
            let other_job = TaskId::new("elsewhere", local.task);
            prop_assert!(!is_update(&full, &local, &spec, &other_job));
        }
    }
}
