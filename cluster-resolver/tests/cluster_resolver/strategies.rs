//! proptest strategies for clusters as TF_CONFIG writes them, shared by the TF_CONFIG, Union,
//! SageMaker and chief/evaluator tests; and a fixed-seed sampler for the batches the
//! TensorFlow differential tests send.

use std::collections::{BTreeMap, HashSet};

use cluster_spec::ClusterSpec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// One job's tasks: dense addresses, or index -> (address, whether the JSON key is written
/// with a leading zero, which TensorFlow's `int()` and ours both read as the same index).
#[derive(Debug, Clone)]
pub(crate) enum Tasks {
    Dense(Vec<String>),
    Sparse(BTreeMap<u32, (String, bool)>),
}

/// A generated cluster: jobs in definition order.
#[derive(Debug, Clone)]
pub(crate) struct Cluster(pub(crate) Vec<(String, Tasks)>);

impl Cluster {
    /// The TF_CONFIG `cluster` JSON text, jobs in definition order.
    pub(crate) fn to_json(&self) -> String {
        let jobs: Vec<String> = self
            .0
            .iter()
            .map(|(name, tasks)| {
                let tasks = match tasks {
                    Tasks::Dense(addrs) => serde_json::to_string(addrs).unwrap(),
                    Tasks::Sparse(map) => {
                        let entries: Vec<String> = map
                            .iter()
                            .map(|(i, (a, pad))| {
                                let key = if *pad { format!("0{i}") } else { i.to_string() };
                                format!("{key:?}: {a:?}")
                            })
                            .collect();
                        format!("{{{}}}", entries.join(", "))
                    }
                };
                format!("{name:?}: {tasks}")
            })
            .collect();
        format!("{{{}}}", jobs.join(", "))
    }

    /// The same cluster built with the builder.
    pub(crate) fn to_spec(&self) -> ClusterSpec {
        let mut builder = ClusterSpec::builder();
        for (name, tasks) in &self.0 {
            builder = match tasks {
                Tasks::Dense(addrs) => builder.job(name, addrs),
                Tasks::Sparse(map) => {
                    builder.sparse_job(name, map.iter().map(|(i, (a, _))| (*i, a)))
                }
            };
        }
        builder.build().unwrap()
    }
}

/// Valid `host:port` addresses of several shapes (names, IPv4, bracketed IPv6).
pub(crate) fn address() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        4 => "[a-z][a-z0-9-]{0,8}(\\.[a-z]{2,3})?",
        1 => (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(a, b, c, d)| format!("{a}.{b}.{c}.{d}")),
        1 => Just("[::1]".to_owned()),
        1 => Just("localhost".to_owned()),
    ];
    (host, 0u16..=65535).prop_map(|(h, p)| format!("{h}:{p}"))
}

/// Tasks of one job: up to `max` dense addresses, or up to `max` sparse ones at indices below 8.
pub(crate) fn tasks(max: usize) -> impl Strategy<Value = Tasks> {
    prop_oneof![
        3 => prop::collection::vec(address(), 0..=max).prop_map(Tasks::Dense),
        2 => prop::collection::btree_map(0u32..8, (address(), prop::bool::weighted(0.2)), 0..=max)
            .prop_map(Tasks::Sparse),
    ]
}

/// Clusters whose jobs are a random subset of `names`, in random order.
pub(crate) fn cluster_of(
    names: &'static [&'static str],
    max_tasks: usize,
) -> impl Strategy<Value = Cluster> {
    prop::sample::subsequence(names, 0..=names.len())
        .prop_shuffle()
        .prop_flat_map(move |jobs| {
            let n = jobs.len();
            (Just(jobs), prop::collection::vec(tasks(max_tasks), n))
        })
        .prop_map(|(jobs, tasks)| Cluster(jobs.into_iter().map(str::to_owned).zip(tasks).collect()))
}

/// Clusters of up to four jobs with random valid names.
pub(crate) fn cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(("[a-z][a-z0-9_]{0,6}", tasks(4)), 0..4).prop_map(|jobs| {
        let mut seen = HashSet::new();
        Cluster(
            jobs.into_iter()
                .filter(|(name, _)| seen.insert(name.clone()))
                .collect(),
        )
    })
}

/// `n` values of `strategy` from a fixed seed: the same batch on every run.
pub(crate) fn sample<S: Strategy>(strategy: S, n: usize) -> Vec<S::Value> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).expect("strategy").current())
        .collect()
}
