//! Differential test against TensorFlow 2.21: the TF_CONFIG each pod of an Indexed Job (and of
//! a JobSet) resolves to, fed to TensorFlow's `TFConfigClusterResolver`, gives TensorFlow the
//! same cluster, task, RPC layer and master as our resolver gives.

use cluster_resolver::k8s_indexed::{
    COMPLETIONS, HOSTNAME, JOB_COMPLETION_INDEX, LAYOUT, NAMESPACE, REPLICATED_JOBS, SUBDOMAIN,
};
use cluster_resolver::{ClusterResolver, Env, KubernetesIndexedJobClusterResolver};
use serde_json::{Value, json};

use crate::cluster_resolver::runtime::block_on;

const SCRIPT: &str = r#"
import json, sys
from tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver import TFConfigClusterResolver
import os
out = []
for tf_config in json.load(sys.stdin):
    os.environ["TF_CONFIG"] = tf_config
    r = TFConfigClusterResolver()
    out.append({"cluster": r.cluster_spec().as_dict(), "task_type": r.task_type,
                "task_id": r.task_id, "rpc_layer": r.rpc_layer, "master": r.master()})
print(json.dumps(out))
"#;

/// Every pod of an Indexed Job with a layout and a namespace, and of a JobSet.
fn pods() -> Vec<Vec<(&'static str, String)>> {
    let mut pods = Vec::new();
    for i in 0..5 {
        pods.push(vec![
            (JOB_COMPLETION_INDEX, i.to_string()),
            (HOSTNAME, format!("train-job-{i}")),
            (COMPLETIONS, "5".to_owned()),
            (SUBDOMAIN, "train".to_owned()),
            (NAMESPACE, "ml".to_owned()),
            (LAYOUT, "chief=1,ps=2".to_owned()),
        ]);
    }
    for (job, replicas) in [("chief", 1), ("ps", 1), ("worker", 2)] {
        for j in 0..replicas {
            pods.push(vec![
                (JOB_COMPLETION_INDEX, "0".to_owned()),
                (HOSTNAME, format!("tf-{job}-{j}-0")),
                (REPLICATED_JOBS, "chief=1,ps=1,worker=2".to_owned()),
            ]);
        }
    }
    pods
}

#[test]
fn tensorflow_reads_our_tf_config_as_we_resolve_it() {
    let resolvers: Vec<_> = pods()
        .into_iter()
        .map(|vars| KubernetesIndexedJobClusterResolver::new(Env::from_iter(vars)))
        .collect();
    let tf_configs: Vec<String> = resolvers
        .iter()
        .map(|r| r.tf_config().unwrap().to_json())
        .collect();
    let answers: Vec<Value> =
        serde_json::from_str(&tf_oracle::run(SCRIPT, &json!(tf_configs).to_string())).unwrap();
    assert_eq!(answers.len(), resolvers.len());
    for (r, tf) in resolvers.iter().zip(&answers) {
        let ours = json!({
            "cluster": serde_json::from_str::<Value>(&block_on(r.cluster_spec()).unwrap().to_json()).unwrap(),
            "task_type": r.task_type(),
            "task_id": r.task_id(),
            "rpc_layer": r.rpc_layer(),
            "master": block_on(r.master(None, None, None)).unwrap(),
        });
        assert_eq!(&ours, tf, "TF_CONFIG {}", r.tf_config().unwrap().to_json());
    }
}
