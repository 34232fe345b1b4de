//! proptest strategies for valid clusters, shared by the property and TensorFlow tests.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value};

/// One job's tasks as generated: dense addresses, or sparse index -> address.
#[derive(Debug, Clone)]
pub(crate) enum Tasks {
    Dense(Vec<String>),
    Sparse(BTreeMap<u32, String>),
}

/// A generated cluster: jobs in definition order.
#[derive(Debug, Clone)]
pub(crate) struct Cluster(pub(crate) Vec<(String, Tasks)>);

impl Cluster {
    /// The TF_CONFIG JSON shape of the cluster, sparse keys as decimal strings.
    pub(crate) fn to_value(&self) -> Value {
        let jobs: Map<String, Value> = self
            .0
            .iter()
            .map(|(name, tasks)| {
                let tasks = match tasks {
                    Tasks::Dense(addrs) => Value::from(addrs.clone()),
                    Tasks::Sparse(map) => Value::Object(
                        map.iter()
                            .map(|(i, a)| (i.to_string(), Value::from(a.clone())))
                            .collect(),
                    ),
                };
                (name.clone(), tasks)
            })
            .collect();
        Value::Object(jobs)
    }

    pub(crate) fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

pub(crate) fn job_name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_]{0,10}"
}

pub(crate) fn address() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        "[a-z0-9][a-z0-9.-]{0,20}",
        "[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}",
        (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(a, b, c, d)| format!("{a}.{b}.{c}.{d}")),
        any::<u128>().prop_map(|v| format!("[{}]", std::net::Ipv6Addr::from(v))),
        Just("[::1]".to_string()),
        Just("localhost".to_string()),
    ];
    (host, 0u16..=65535).prop_map(|(h, p)| format!("{h}:{p}"))
}

fn task_index() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..12, 1 => 0u32..=i32::MAX as u32]
}

fn tasks() -> impl Strategy<Value = Tasks> {
    prop_oneof![
        prop::collection::vec(address(), 0..6).prop_map(Tasks::Dense),
        prop::collection::btree_map(task_index(), address(), 0..6).prop_map(Tasks::Sparse),
    ]
}

/// Clusters of up to five uniquely named jobs, in random definition order.
pub(crate) fn cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec((job_name(), tasks()), 0..5).prop_map(|jobs| {
        let mut seen = std::collections::HashSet::new();
        Cluster(
            jobs.into_iter()
                .filter(|(name, _)| seen.insert(name.clone()))
                .collect(),
        )
    })
}
