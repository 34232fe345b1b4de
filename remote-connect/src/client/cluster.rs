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

/// TensorFlow's change detection in `connect_to_cluster` (`remote.py`), exactly: the new
/// connect only updates the current context when the local job and task are unchanged and the
/// `ClusterDef` last sent (`current`: jobs sorted by name, then the local job if the client
/// added it), less the local job whenever the new spec lacks that job, equals the new spec's
/// `ClusterDef` as a protobuf message, where job order matters. So the spec a context reports
/// (local job included) counts as unchanged only when the local job sorts after every other
/// job, as in TensorFlow. Anything else resets the context.
pub(crate) fn is_update(
    current: &cluster_proto::ClusterDef,
    current_local: &crate::TaskId,
    new_spec: &ClusterSpec,
    new_local: &crate::TaskId,
) -> bool {
    if current_local != new_local {
        return false;
    }
    let new = new_spec.as_cluster_def();
    if new_spec.has_job(&new_local.job) {
        return *current == new;
    }
    let kept = current.job.iter().filter(|job| job.name != new_local.job);
    kept.eq(new.job.iter())
}

/// The rule a followed context updates by (TensorFlow's `update_server_def`, which keeps the
/// context when the local task stays): an update when the local job and task are unchanged and
/// the jobs, as `ClusterDef` lists them (sorted by name, the local job left out), are the same;
/// tasks within them may come, go or move. A job added, removed or renamed changes the job
/// order every task was given, and the local task renamed is another client: both reset.
pub(crate) fn same_jobs(
    current: &ClusterSpec,
    current_local: &crate::TaskId,
    new_spec: &ClusterSpec,
    new_local: &crate::TaskId,
) -> bool {
    let names = |spec: &ClusterSpec| {
        let mut jobs: Vec<String> = spec
            .jobs()
            .into_iter()
            .filter(|job| *job != new_local.job)
            .map(str::to_owned)
            .collect();
        jobs.sort_unstable();
        jobs
    };
    current_local == new_local && names(current) == names(new_spec)
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

    /// The `ClusterDef` a connect to `spec` sent, and the local task: with `localhost` added
    /// (`true`) or with the local task one of the spec's own (`false`).
    fn connected(
        spec: &ClusterSpec,
        added: bool,
    ) -> (cluster_proto::ClusterDef, ClusterSpec, TaskId) {
        if added {
            let mut sent = spec.as_cluster_def();
            sent.job.push(cluster_proto::JobDef {
                name: "localhost".into(),
                tasks: [(0, "localhost:5555".into())].into(),
            });
            let full = edit(spec, None, Some(("localhost", "localhost:5555"))).unwrap();
            (sent, full, TaskId::new("localhost", 0))
        } else {
            let job = spec.jobs()[0].to_owned();
            (spec.as_cluster_def(), spec.clone(), TaskId::new(job, 0))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_same_spec_is_an_update(jobs in jobs(), added in any::<bool>()) {
            let spec = build(&jobs);
            let (sent, full, local) = connected(&spec, added);
            prop_assert!(is_update(&sent, &local, &spec, &local));
            // The cluster as the context reports it (our job included) is the same cluster
            // only if our job sorts last, since TensorFlow compares jobs in order.
            let last = spec.jobs().iter().all(|job| *job < local.job.as_str());
            prop_assert_eq!(is_update(&sent, &local, &full, &local), !added || last);
        }

        #[test]
        fn a_changed_address_or_an_extra_task_is_a_reset(
            jobs in jobs(),
            added in any::<bool>(),
            pick in any::<proptest::sample::Index>(),
            extra in any::<bool>(),
        ) {
            let spec = build(&jobs);
            let (sent, _, local) = connected(&spec, added);
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
            prop_assert!(!is_update(&sent, &local, &changed, &local));
            // Also when the new spec names our job itself.
            let (_, changed_full, _) = connected(&changed, added);
            prop_assert!(!is_update(&sent, &local, &changed_full, &local));
        }

        #[test]
        fn a_changed_local_task_is_a_reset(jobs in jobs(), added in any::<bool>()) {
            let spec = build(&jobs);
            let (sent, _, local) = connected(&spec, added);
            let other_task = TaskId::new(local.job.clone(), local.task + 1);
            prop_assert!(!is_update(&sent, &local, &spec, &other_task));
            let other_job = TaskId::new("elsewhere", local.task);
            prop_assert!(!is_update(&sent, &local, &spec, &other_job));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn followed_tasks_may_come_go_and_move_within_the_same_jobs(
            jobs in jobs(),
            pick in any::<proptest::sample::Index>(),
            moved in any::<bool>(),
        ) {
            let spec = build(&jobs);
            let local = TaskId::new("localhost", 0);
            let mut changed = jobs.clone();
            let (job, addresses) = &mut changed[pick.index(jobs.len())];
            if moved {
                addresses[0] = format!("{job}-moved:3333");
            } else {
                addresses.push(format!("{job}-extra:2222"));
            }
            prop_assert!(same_jobs(&spec, &local, &build(&changed), &local));
            // The local job in the new spec (as the context reports it) is no new job.
            let (_, full, _) = connected(&build(&changed), true);
            prop_assert!(same_jobs(&spec, &local, &full, &local));
        }

        #[test]
        fn a_job_added_or_removed_or_another_local_task_resets_a_follower(
            jobs in jobs(),
            remove in any::<bool>(),
        ) {
            let spec = build(&jobs);
            let local = TaskId::new("localhost", 0);
            let mut changed = jobs.clone();
            if remove && changed.len() > 1 {
                changed.pop();
            } else {
                changed.push(("zz_extra".into(), vec!["zz-0:2222".into()]));
            }
            prop_assert!(!same_jobs(&spec, &local, &build(&changed), &local));
            prop_assert!(!same_jobs(&spec, &local, &spec, &TaskId::new("localhost", 1)));
            prop_assert!(!same_jobs(&spec, &local, &spec, &TaskId::new("renamed", 0)));
        }
    }

    /// TensorFlow's own decision (`remote.py`'s `is_server_def_changed`, with TensorFlow's
    /// `ClusterSpec` and `ServerDef` protos) for the same cases.
    const TF_DECISION: &str = r#"
import copy, json, sys
import tensorflow as tf
from tensorflow.core.protobuf import tensorflow_server_pb2
out = []
for line in sys.stdin:
    c = json.loads(line)
    old = tf.train.ClusterSpec(c["old"])
    sent = copy.deepcopy(old.as_cluster_def())
    if c["old_job"] not in old.jobs:
        job_def = sent.job.add()
        job_def.name = c["old_job"]
        job_def.tasks[0] = "localhost:5555"
    current = tensorflow_server_pb2.ServerDef(cluster=sent, job_name=c["old_job"], task_index=c["old_task"])
    new = tf.train.ClusterSpec(c["new"])
    job_name, task_index = c["new_job"], c["new_task"]
    if job_name not in new.jobs:
        for i, job in enumerate(current.cluster.job):
            if job.name == job_name:
                del current.cluster.job[i]
    changed = (current.cluster != new.as_cluster_def() or current.job_name != job_name
               or current.task_index != task_index)
    out.append(not changed)
print(json.dumps(out))
"#;

    /// A tiny deterministic generator, so the cases are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn random_jobs(rng: &mut Rng) -> Jobs {
        let names = [
            "a",
            "chief",
            "evaluator",
            "localhost",
            "ps",
            "worker",
            "zeta",
        ];
        let mut jobs: Jobs = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let name = names[rng.below(names.len())];
            if jobs.iter().any(|(j, _)| j == name) {
                continue;
            }
            let addresses = (0..1 + rng.below(2))
                .map(|_| format!("h{}:{}", rng.below(2), 2222 + rng.below(2)))
                .collect();
            jobs.push((name.to_owned(), addresses));
        }
        jobs
    }

    fn json(jobs: &Jobs) -> String {
        build(jobs).to_json()
    }

    #[test]
    fn update_or_reset_as_tensorflow_decides() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cases = Vec::new();
        let mut input = String::new();
        while cases.len() < 400 {
            let old = random_jobs(&mut rng);
            let locals = ["localhost", "worker", "chief"];
            let old_job = locals[rng.below(locals.len())];
            let old_task = match old.iter().find(|(j, _)| j == old_job) {
                Some((_, addresses)) => rng.below(addresses.len()) as u32,
                None => 0,
            };
            let mut new = match rng.below(4) {
                0 => random_jobs(&mut rng),
                _ => old.clone(),
            };
            match rng.below(4) {
                // The cluster as the context reports it: our added job included.
                0 if !new.iter().any(|(j, _)| j == old_job) => {
                    new.push((old_job.to_owned(), vec!["localhost:5555".to_owned()]));
                }
                1 if new.len() > 1 => {
                    new.remove(rng.below(new.len()));
                }
                _ => {}
            }
            let (new_job, new_task) = match rng.below(6) {
                0 => (locals[rng.below(locals.len())], 0),
                1 => (old_job, old_task + 1),
                _ => (old_job, old_task),
            };
            if new.is_empty() {
                continue;
            }
            let old_spec = build(&old);
            let new_spec = build(&new);
            let mut sent = old_spec.as_cluster_def();
            if !old_spec.has_job(old_job) {
                sent.job.push(cluster_proto::JobDef {
                    name: old_job.to_owned(),
                    tasks: [(0, "localhost:5555".to_owned())].into(),
                });
            }
            let ours = is_update(
                &sent,
                &TaskId::new(old_job, old_task),
                &new_spec,
                &TaskId::new(new_job, new_task),
            );
            input.push_str(&format!(
                "{{\"old\": {}, \"old_job\": \"{old_job}\", \"old_task\": {old_task}, \"new\": {}, \"new_job\": \"{new_job}\", \"new_task\": {new_task}}}\n",
                json(&old),
                json(&new)
            ));
            cases.push((
                old_spec, old_job, old_task, new_spec, new_job, new_task, ours,
            ));
        }
        let answers: Vec<bool> =
            serde_json::from_str(&tf_oracle::run(TF_DECISION, &input)).unwrap();
        assert_eq!(answers.len(), cases.len());
        let updates = answers.iter().filter(|&&a| a).count();
        assert!(
            updates > 50 && updates < 350,
            "the cases exercise both outcomes: {updates}"
        );
        for (case, tf) in cases.iter().zip(answers) {
            assert_eq!(
                case.6, tf,
                "case {case:?}: ours {}, TensorFlow {tf}",
                case.6
            );
        }
    }
}
