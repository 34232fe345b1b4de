//! `UnionClusterResolver`: merge properties, and (in `vs_tensorflow`) the differential test
//! against TensorFlow 2.21's `UnionResolver` of `SimpleClusterResolver`s.

mod vs_tensorflow;

use std::collections::{BTreeMap, BTreeSet};

use cluster_resolver::{
    ClusterResolver, Error, SimpleClusterResolver, UnionClusterResolver, union,
};
use cluster_spec::ClusterSpec;
use proptest::prelude::*;

use crate::cluster_resolver::runtime::block_on;
use crate::cluster_resolver::strategies::{Cluster, Tasks, address, cluster};

fn union_of(specs: &[ClusterSpec]) -> UnionClusterResolver {
    let boxed = specs
        .iter()
        .map(|s| Box::new(SimpleClusterResolver::new(s.clone())) as Box<dyn ClusterResolver>);
    UnionClusterResolver::from_resolvers(boxed).unwrap()
}

const DENSE_JOBS: &[&str] = &["a", "b", "c", "d"];
const SPARSE_JOBS: &[&str] = &["a", "b"];

/// Clusters whose jobs are all dense and non-empty (merged by concatenation).
fn dense_cluster() -> impl Strategy<Value = ClusterSpec> {
    prop::collection::btree_map(
        prop::sample::select(DENSE_JOBS),
        prop::collection::vec(address(), 1..4),
        0..4,
    )
    .prop_map(|jobs| {
        jobs.into_iter()
            .fold(ClusterSpec::builder(), |b, (name, addrs)| {
                b.job(name, addrs)
            })
            .build()
            .unwrap()
    })
}

/// Sparse clusters over jobs `a` and `b` with indices from 1 to 5: never task 0, so never
/// dense, so always merged by index.
fn sparse_cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::btree_map(
        prop::sample::select(SPARSE_JOBS),
        prop::collection::btree_map(1u32..6, (address(), Just(false)), 1..3)
            .prop_map(Tasks::Sparse),
        1..=2,
    )
    .prop_map(|jobs| Cluster(jobs.into_iter().map(|(n, t)| (n.to_owned(), t)).collect()))
}

proptest! {
    /// A union of one resolver is that resolver.
    #[test]
    fn a_union_of_one_is_the_one(cluster in cluster()) {
        let spec = cluster.to_spec();
        let merged = block_on(union_of(std::slice::from_ref(&spec)).cluster_spec()).unwrap();
        prop_assert_eq!(merged.jobs(), spec.jobs());
        prop_assert_eq!(merged, spec);
    }

    /// All lists: each job is the concatenation of its lists in resolver order, jobs in order of
    /// first appearance, and no task is lost.
    #[test]
    fn lists_concatenate(specs in prop::collection::vec(dense_cluster(), 1..4)) {
        let merged = block_on(union_of(&specs).cluster_spec()).unwrap();
        let mut order: Vec<&str> = Vec::new();
        for spec in &specs {
            for job in spec.jobs() {
                if !order.contains(&job) {
                    order.push(job);
                }
            }
        }
        prop_assert_eq!(merged.jobs(), order.clone());
        for job in order {
            let expected: Vec<Option<&str>> = specs
                .iter()
                .filter(|s| s.has_job(job))
                .flat_map(|s| s.job_tasks(job).unwrap())
                .collect();
            prop_assert_eq!(merged.job_tasks(job).unwrap(), expected);
        }
        prop_assert_eq!(merged.total_tasks(), specs.iter().map(ClusterSpec::total_tasks).sum::<usize>());
    }

    /// By index: the merge succeeds exactly when no index repeats within a job, and then holds
    /// every task; otherwise the error names the job and the repeated indices.
    #[test]
    fn sparse_jobs_merge_by_index_or_name_the_clash(clusters in prop::collection::vec(sparse_cluster(), 1..4)) {
        let specs: Vec<ClusterSpec> = clusters.iter().map(Cluster::to_spec).collect();
        let mut seen: BTreeMap<&str, BTreeMap<u32, &str>> = BTreeMap::new();
        let mut clash: Option<(String, BTreeSet<u32>)> = None;
        'outer: for spec in &specs {
            for job in spec.jobs() {
                let tasks = seen.entry(job).or_default();
                let repeated: BTreeSet<u32> = spec
                    .task_indices(job)
                    .unwrap()
                    .into_iter()
                    .filter(|i| tasks.contains_key(i))
                    .collect();
                if !repeated.is_empty() {
                    clash = Some((job.to_owned(), repeated));
                    break 'outer;
                }
                tasks.extend(spec.tasks(job).unwrap());
            }
        }
        match (block_on(union_of(&specs).cluster_spec()), clash) {
            (Ok(merged), None) => {
                for (job, tasks) in seen {
                    prop_assert_eq!(merged.tasks(job).unwrap().collect::<BTreeMap<_, _>>(), tasks);
                }
            }
            (Err(Error::Union(union::Error::DuplicateTasks { job, tasks })), Some((clash_job, repeated))) => {
                prop_assert_eq!(job, clash_job);
                prop_assert_eq!(tasks.into_iter().collect::<BTreeSet<_>>(), repeated);
            }
            (got, expected) => prop_assert!(false, "got {:?}, expected clash {:?}", got, expected),
        }
    }
}

#[test]
fn no_resolvers_is_tensorflows_error() {
    let e = UnionClusterResolver::from_resolvers(Vec::new()).unwrap_err();
    assert_eq!(e.to_string(), "At least one ClusterResolver is required.");
}

#[test]
fn resolvers_of_any_kind_combine() {
    use cluster_resolver::{Env, TfConfigClusterResolver};
    // TensorFlow's docstring example: a GPU count layered over TF_CONFIG.
    let env = Env::from_iter([(
        "TF_CONFIG",
        r#"{"cluster": {"worker": ["w0:1", "w1:1"]}, "task": {"type": "worker", "index": 1}}"#,
    )]);
    let tf_config = TfConfigClusterResolver::new(env);
    let spec = block_on(tf_config.cluster_spec()).unwrap();
    let gpu_override = SimpleClusterResolver::new(spec).with_num_accelerators([("GPU", 1)]);
    let union = UnionClusterResolver::new(gpu_override).with_resolver(tf_config);
    assert_eq!(
        block_on(union.num_accelerators(None, None)).unwrap()["GPU"],
        1
    );
    // Both give the same dense worker job, so the lists concatenate.
    assert_eq!(
        block_on(union.cluster_spec())
            .unwrap()
            .num_tasks("worker")
            .unwrap(),
        4
    );
    assert_eq!(union.resolvers().len(), 2);
}
