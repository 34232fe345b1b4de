//! `SageMakerClusterResolver`: every host of a training job computes the same cluster and its
//! own place in it; (in `vs_tensorflow`) the differential test against TensorFlow 2.21.

mod vs_tensorflow;

use cluster_resolver::{ClusterResolver, Env, SageMakerClusterResolver};
use proptest::prelude::*;

use crate::cluster_resolver::runtime::block_on;

fn resolver(hosts: &[String], current: &str) -> SageMakerClusterResolver {
    let hosts = serde_json::to_string(hosts).unwrap();
    SageMakerClusterResolver::new(Env::from_iter([
        ("SM_HOSTS", hosts.as_str()),
        ("SM_CURRENT_HOST", current),
    ]))
}

proptest! {
    /// Whatever order SageMaker lists the hosts in, and whichever host asks, the cluster is the
    /// same, and each host is the task at its own address.
    #[test]
    fn every_host_agrees_and_finds_itself(
        listed in prop::collection::btree_set("algo-[1-9][0-9]?", 1..8)
            .prop_map(|hosts| hosts.into_iter().collect::<Vec<_>>())
            .prop_shuffle(),
        port in 1u16..,
    ) {
        let first = block_on(resolver(&listed, &listed[0]).with_port(port).cluster_spec()).unwrap();
        for host in &listed {
            let r = resolver(&listed, host).with_port(port);
            prop_assert_eq!(&block_on(r.cluster_spec()).unwrap(), &first);
            let id = r.task_id().unwrap();
            prop_assert_eq!(first.task_address("worker", id).unwrap(), format!("{host}:{port}"));
            prop_assert_eq!(r.task_type(), Some("worker".to_owned()));
        }
    }
}
