//! Differential tests against real TensorFlow 2.21: the same clusters through
//! `tf.train.ClusterSpec` and through ours must give the same repr, job order, `as_dict`,
//! accessors and `ClusterDef`, and each side must decode the other's bytes to the same message.

use cluster_spec::ClusterSpec;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};
use tf_oracle::{hex, unhex};

use super::strategies::cluster;

/// For each input line {"cluster": ..., "ours": hex}: TF's view of the same cluster.
const SCRIPT: &str = r#"
import json, sys
import tensorflow as tf
from tensorflow.core.protobuf import cluster_pb2

out = []
for line in sys.stdin:
    case = json.loads(line)
    cluster = {job: ({int(i): a for i, a in tasks.items()} if isinstance(tasks, dict) else tasks)
               for job, tasks in case["cluster"].items()}
    spec = tf.train.ClusterSpec(cluster)
    ours = cluster_pb2.ClusterDef.FromString(bytes.fromhex(case["ours"]))
    from_def = tf.train.ClusterSpec(ours)
    out.append({
        "repr": repr(spec),
        "jobs": spec.jobs,
        "as_dict": spec.as_dict(),
        "def": spec.as_cluster_def().SerializeToString().hex(),
        "ours_decodes_equal": ours == spec.as_cluster_def(),
        "from_def_jobs": from_def.jobs,
        "specs_equal": from_def == spec,
        "bool": bool(spec),
        "num_tasks": {j: spec.num_tasks(j) for j in spec.jobs},
        "task_indices": {j: spec.task_indices(j) for j in spec.jobs},
        # job_tasks lists max(index)+1 entries: skip the huge sparse indices.
        "job_tasks": {j: spec.job_tasks(j) for j in spec.jobs
                      if spec.num_tasks(j) and max(spec.task_indices(j)) < 4096},
    })
try:
    spec.num_tasks("nope")
except ValueError as e:
    out.append(str(e))
try:
    tf.train.ClusterSpec({"w": ["a:1", "b:2", "c:3"]}).task_address("w", 3)
except ValueError as e:
    out.append(str(e))
print(json.dumps(out))
"#;

#[test]
fn random_clusters_match_tensorflow() {
    let mut runner = TestRunner::deterministic();
    let strategy = cluster();
    let mut clusters: Vec<Value> = (0..400)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current().to_value())
        .collect();
    // The issue's golden cluster and a few hand-picked shapes.
    clusters.push(json!({"w": ["a:1"], "ps": {"2": "b:2"}}));
    clusters.push(json!({"worker": {"0": "a:1", "1": "b:1"}, "chief": [], "ps": {}}));
    clusters.push(json!({"w": {"2147483647": "[::1]:0"}}));

    let specs: Vec<ClusterSpec> = clusters
        .iter()
        .map(|c| ClusterSpec::from_json(&c.to_string()).unwrap())
        .collect();
    let input: String = clusters
        .iter()
        .zip(&specs)
        .map(|(c, s)| {
            json!({"cluster": c, "ours": hex(&s.encode_cluster_def())}).to_string() + "\n"
        })
        .collect();
    let output: Vec<Value> = serde_json::from_str(&tf_oracle::run(SCRIPT, &input)).unwrap();
    assert_eq!(output.len(), specs.len() + 2);

    for ((cluster, spec), tf) in clusters.iter().zip(&specs).zip(&output) {
        let context = format!("cluster {cluster}");
        assert_eq!(spec.to_string(), tf["repr"], "repr of {context}");
        assert_eq!(json!(spec.jobs()), tf["jobs"], "jobs of {context}");
        let ours: Value = serde_json::from_str(&spec.to_json()).unwrap();
        assert_eq!(ours, tf["as_dict"], "to_json vs as_dict of {context}");
        assert_eq!(
            tf["ours_decodes_equal"], true,
            "TF decodes our ClusterDef of {context}"
        );
        assert_eq!(
            tf["specs_equal"], true,
            "TF spec from our ClusterDef of {context}"
        );
        assert_eq!(!spec.is_empty(), tf["bool"], "bool of {context}");
        let from_tf = ClusterSpec::decode_cluster_def(&unhex(tf["def"].as_str().unwrap())).unwrap();
        assert_eq!(
            &from_tf, spec,
            "our decoding of TF's ClusterDef of {context}"
        );
        assert_eq!(
            json!(from_tf.jobs()),
            tf["from_def_jobs"],
            "jobs from ClusterDef of {context}"
        );
        for job in spec.jobs() {
            assert_eq!(
                json!(spec.num_tasks(job).unwrap()),
                tf["num_tasks"][job],
                "{context}"
            );
            assert_eq!(
                json!(spec.task_indices(job).unwrap()),
                tf["task_indices"][job],
                "{context}"
            );
            if tf["job_tasks"].get(job).is_some() {
                assert_eq!(
                    json!(spec.job_tasks(job).unwrap()),
                    tf["job_tasks"][job],
                    "{context}"
                );
            }
        }
    }
    // TensorFlow's wording of lookup errors is ours.
    let w = ClusterSpec::builder()
        .job("w", ["a:1", "b:2", "c:3"])
        .build()
        .unwrap();
    assert_eq!(
        json!(w.num_tasks("nope").unwrap_err().to_string()),
        output[specs.len()]
    );
    assert_eq!(
        json!(w.task_address("w", 3).unwrap_err().to_string()),
        output[specs.len() + 1]
    );
}
