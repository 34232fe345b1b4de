//! `TfConfigClusterResolver` and `TfConfig`: round trips (`tf_config_for` → resolver), the
//! TF_CONFIG JSON shapes launchers write, and (in `vs_tensorflow`) the differential test
//! against TensorFlow 2.21.

mod vs_tensorflow;

use cluster_resolver::{
    ClusterResolver, Env, Error, TfConfig, TfConfigClusterResolver, tf_config_for,
};
use cluster_spec::ClusterSpec;
use proptest::prelude::*;

use crate::cluster_resolver::runtime::block_on;
use crate::cluster_resolver::strategies::cluster;

fn resolver(tf_config: &str) -> TfConfigClusterResolver {
    TfConfigClusterResolver::new(Env::from_iter([("TF_CONFIG", tf_config)]))
}

/// Every task of `spec`, as (job, index).
fn all_tasks(spec: &ClusterSpec) -> Vec<(String, u32)> {
    spec.jobs()
        .into_iter()
        .flat_map(|job| {
            spec.task_indices(job)
                .unwrap()
                .into_iter()
                .map(move |i| (job.to_owned(), i))
        })
        .collect()
}

proptest! {
    /// What `tf_config_for` writes for any task of any spec, the resolver reads back: the same
    /// spec (jobs in the same order), task and RPC layer, and TensorFlow's master rule.
    #[test]
    fn rendered_tf_config_reads_back_to_the_same_spec_and_task(
        cluster in cluster(),
        pick in any::<prop::sample::Index>(),
        rpc_layer in prop::option::of(prop_oneof![Just("grpc".to_owned()), "[a-z+]{0,8}"]),
    ) {
        let spec = cluster.to_spec();
        let tasks = all_tasks(&spec);
        prop_assume!(!tasks.is_empty());
        let (job, index) = pick.get(&tasks).clone();
        let json = tf_config_for(&spec, &job, index, rpc_layer.as_deref()).unwrap();
        let r = resolver(&json);
        let read = block_on(r.cluster_spec()).unwrap();
        prop_assert_eq!(&read, &spec);
        prop_assert_eq!(read.jobs(), spec.jobs());
        prop_assert_eq!(r.task_type(), Some(job.clone()));
        prop_assert_eq!(r.task_id(), Some(index));
        prop_assert_eq!(r.rpc_layer(), rpc_layer.clone());
        let single = spec.jobs().len() == 1 && spec.task_indices(&job).unwrap().last() == Some(&0);
        let master = block_on(r.master(None, None, None)).unwrap();
        if single {
            prop_assert_eq!(master, "");
        } else {
            let address = spec.task_address(&job, index).unwrap();
            prop_assert_eq!(master, cluster_resolver::format_master_url(address, rpc_layer.as_deref()));
        }
    }

    /// Any document reads back from its own JSON, whatever its task says.
    #[test]
    fn any_document_reads_back(
        cluster in cluster(),
        task_type in prop::option::of("[a-z]{0,6}"),
        task_id in prop::option::of(0u32..=i32::MAX as u32),
        rpc_layer in prop::option::of(".{0,6}"),
        session_master in prop::option::of(".{0,12}"),
        environment in prop::option::of("[a-z]{0,6}"),
    ) {
        let mut config = TfConfig::new(cluster.to_spec());
        config.task_type = task_type;
        config.task_id = task_id;
        config.rpc_layer = rpc_layer;
        config.session_master = session_master;
        config.environment = environment;
        prop_assert_eq!(TfConfig::from_json(&config.to_json()).unwrap(), config);
    }

    /// The cluster JSON launchers write (dense lists, sparse objects with string keys, keys
    /// with leading zeros) reads as the spec the builder makes.
    #[test]
    fn cluster_json_reads_as_the_built_spec(cluster in cluster(), index in 0u32..5) {
        let json = format!(
            r#"{{"cluster": {}, "task": {{"type": "t", "index": "{index}"}}}}"#,
            cluster.to_json()
        );
        let config = TfConfig::from_json(&json).unwrap();
        prop_assert_eq!(config.cluster, cluster.to_spec());
        prop_assert_eq!(config.task_id, Some(index));
    }

    /// No input makes the reader panic; every rejection names TF_CONFIG.
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,40}") {
        if let Err(e) = TfConfig::from_json(&text) {
            prop_assert!(e.to_string().contains("TF_CONFIG"), "{}", e);
        }
    }
}

/// tensorflow/tensorflow#48065 and #14502: sparse jobs in TF_CONFIG have string keys.
#[test]
fn sparse_jobs_with_string_keys() {
    let r = resolver(
        r#"{"cluster": {"chief": ["c:2222"], "worker": {"1": "w1:2222", "3": "w3:2222"}},
            "task": {"type": "worker", "index": "3"}}"#,
    );
    let spec = block_on(r.cluster_spec()).unwrap();
    assert_eq!(spec.task_indices("worker").unwrap(), [1, 3]);
    assert_eq!(block_on(r.master(None, None, None)).unwrap(), "w3:2222");
    assert_eq!(
        spec.to_json(),
        r#"{"chief":["c:2222"],"worker":{"1":"w1:2222","3":"w3:2222"}}"#
    );
}

/// The task of TF_CONFIG feeds the chief / evaluator rules directly.
#[test]
fn task_feeds_the_multi_worker_rules() {
    use cluster_resolver::multi_worker::{id_in_cluster, is_chief};
    let r = resolver(
        r#"{"cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]},
            "task": {"type": "worker", "index": 1}}"#,
    );
    let spec = block_on(r.cluster_spec()).unwrap();
    let (t, i) = (r.task_type(), r.task_id());
    assert!(!is_chief(&spec, t.as_deref(), i).unwrap());
    assert_eq!(id_in_cluster(&spec, t.as_deref(), i).unwrap(), 2);
}

#[test]
fn errors_name_the_variable_key_value_and_position() {
    let r = resolver(
        "{\n  \"cluster\": {\"worker\": [\"w0:2222\"]},\n  \"task\": {\"type\": \"worker\", \"index\": \"one\"}\n}",
    );
    let e = block_on(r.cluster_spec()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidJsonVariable { line: 3, .. }),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.starts_with("environment variable TF_CONFIG is invalid at line 3, column 43"),
        "{message}"
    );
    assert!(
        message.contains(r#"invalid value: string "one", expected `task.index`"#),
        "{message}"
    );
}
