//! Differential test against TensorFlow 2.21: `TFConfigClusterResolver` (cluster spec, jobs,
//! task type and id, RPC layer, environment, eight `master(...)` calls) and
//! `multi_worker_util` (`is_chief`, `worker_count`, `id_in_cluster`, `collective_leader`,
//! `coordination_leader` of the resolved task), over hand-picked TF_CONFIG documents and a few
//! hundred generated from a fixed seed, in one python run.
//!
//! Documents TensorFlow accepts and we reject (or read differently) are in [`DIFFERENCES`]:
//! each asserts TensorFlow's answer and ours, so a change on either side shows up.

use cluster_resolver::multi_worker::{
    self, collective_leader, coordination_leader, id_in_cluster, is_chief, worker_count,
};
use cluster_resolver::{ClusterResolver, Env, Error, TfConfigClusterResolver};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cluster_resolver::multi_worker::compare_multi_worker;
use crate::cluster_resolver::runtime::block_on;
use crate::cluster_resolver::strategies::{Cluster, cluster_of, sample};
use crate::cluster_resolver::tf_cases::{self, Answer, Tally, answer};

/// Job names the generated clusters use: the four the chief/evaluator rules allow, TF1's
/// `master`, and one more.
const JOBS: &[&str] = &["chief", "worker", "ps", "evaluator", "master", "trainer"];

const RPC_LAYERS: &[&str] = &["grpc", "grpc+verbs", ""];
const SESSION_MASTERS: &[&str] = &["grpc://sm:1", "local"];
const ENVIRONMENTS: &[&str] = &["cloud", "google"];
const RPC_LAYER_OVERRIDES: &[&str] = &["grpc", ""];
const ENVIRONMENT_OVERRIDES: &[&str] = &["google", ""];

/// The `master(task_type, task_id, rpc_layer)` calls made for every document.
const MASTER_ARGS: &[(Option<&str>, Option<u32>, Option<&str>)] = &[
    (None, None, None),
    (None, None, Some("grpc")),
    (None, Some(1), None),
    (Some("worker"), Some(0), None),
    (Some("chief"), Some(0), Some("x")),
    (Some("ps"), Some(1), None),
    (Some("nope"), Some(0), None),
    (Some("worker"), Some(7), Some("grpc")),
];

/// The constructor's overrides.
#[derive(Debug, Clone, Default)]
struct Overrides {
    task_type: Option<String>,
    task_id: Option<u32>,
    rpc_layer: Option<String>,
    environment: Option<String>,
}

#[derive(Debug, Clone)]
struct Case {
    tf_config: Option<String>,
    overrides: Overrides,
}

impl Case {
    fn plain(tf_config: &str) -> Self {
        Case {
            tf_config: Some(tf_config.to_owned()),
            overrides: Overrides::default(),
        }
    }

    fn with(tf_config: &str, overrides: Overrides) -> Self {
        Case {
            tf_config: Some(tf_config.to_owned()),
            overrides,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "tf_config": self.tf_config,
            "overrides": {
                "task_type": self.overrides.task_type,
                "task_id": self.overrides.task_id,
                "rpc_layer": self.overrides.rpc_layer,
                "environment": self.overrides.environment,
            },
            "master_args": MASTER_ARGS.iter().map(|(t, i, l)| json!([t, i, l])).collect::<Vec<_>>(),
        })
    }

    fn resolver(&self) -> TfConfigClusterResolver {
        let env = match &self.tf_config {
            Some(text) => Env::from_iter([("TF_CONFIG", text.as_str())]),
            None => Env::from_iter::<[(&str, &str); 0]>([]),
        };
        let mut r = TfConfigClusterResolver::new(env);
        r.set_task_type(self.overrides.task_type.clone());
        r.set_task_id(self.overrides.task_id);
        r.set_rpc_layer(self.overrides.rpc_layer.clone());
        if let Some(environment) = &self.overrides.environment {
            r = r.with_environment(environment.clone());
        }
        r
    }
}

/// Documents valid for both, chosen for the rules they exercise.
fn hand_picked() -> Vec<Case> {
    let docs = [
        // Sparse jobs with string keys (tensorflow#48065), index as a string.
        r#"{"cluster": {"worker": {"1": "w1:2222"}, "ps": ["p:1"]}, "task": {"type": "worker", "index": "1"}}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": "007"}}"#,
        r#"{"cluster": {"worker": {"01": "a:1", "0": "b:1"}}, "task": {"type": "worker", "index": 0}}"#,
        // rpc_layer and session_master.
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}, "session_master": "grpc://sm:1"}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "session_master": ""}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "rpc_layer": null, "session_master": null}"#,
        // Chief, evaluator (also outside the cluster), ps, TF1's master job.
        r#"{"cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]}, "task": {"type": "chief", "index": 0}}"#,
        r#"{"cluster": {"chief": ["c:1"], "worker": ["w0:1"]}, "task": {"type": "evaluator", "index": 0}}"#,
        r#"{"cluster": {"evaluator": ["e:1"]}, "task": {"type": "evaluator", "index": 0}}"#,
        r#"{"cluster": {"chief": ["c:1", "d:1"], "worker": ["w0:1"]}, "task": {"type": "worker", "index": 0}}"#,
        r#"{"cluster": {"evaluator": ["e:1", "f:1"], "worker": ["w0:1"]}, "task": {"type": "worker", "index": 0}}"#,
        r#"{"cluster": {"ps": ["p0:1", "p1:1"], "worker": ["w0:1"]}, "task": {"type": "ps", "index": 1}}"#,
        r#"{"cluster": {"ps": ["p0:1"]}, "task": {"type": "ps", "index": 0}}"#,
        r#"{"cluster": {"master": ["m:1"], "worker": ["w0:1"]}, "task": {"type": "master", "index": 0}}"#,
        r#"{"cluster": {"worker": {"0": "a:1", "5": "b:1"}}, "task": {"type": "worker", "index": 5}}"#,
        // No task, no cluster, nothing.
        r#"{"cluster": {"worker": ["a:1", "b:1"]}}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {}}"#,
        r#"{"task": {"type": "worker", "index": 0}}"#,
        "{}",
        // One process: no master; a sparse {3: a} is not one.
        r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"}"#,
        r#"{"cluster": {"worker": {"3": "a:1"}}, "task": {"type": "worker", "index": 3}}"#,
        r#"{"cluster": {"worker": {"0": "a:1"}}}"#,
        // A single job with no tasks: TensorFlow's master() fails on max().
        r#"{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}"#,
        r#"{"cluster": {"worker": {}, "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}}"#,
        // task.type as an integer (TensorFlow's own test), unknown keys, environment.
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": 123456, "index": 0}}"#,
        r#"{"cluster": {"worker": ["a:1", "b:1"]}, "job": {"x": 1}, "environment": "cloud"}"#,
        // Escapes, whitespace, IPv6.
        "{\n  \"cluster\": {\n    \"\\u0077orker\": [\"w\\u0031:1\", \"[::1]:2\"]\n  },\n  \"task\": {\"type\": \"worker\", \"index\": 1}\n}\n",
    ];
    let mut cases: Vec<Case> = docs.iter().map(|d| Case::plain(d)).collect();
    cases.push(Case {
        tf_config: None,
        overrides: Overrides::default(),
    });
    let two = r#"{"cluster": {"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}"#;
    for overrides in [
        Overrides {
            task_id: Some(0),
            ..Overrides::default()
        },
        Overrides {
            task_type: Some("chief".into()),
            task_id: Some(0),
            ..Overrides::default()
        },
        Overrides {
            rpc_layer: Some(String::new()),
            ..Overrides::default()
        },
        Overrides {
            rpc_layer: Some("grpc+verbs".into()),
            environment: Some("google".into()),
            ..Overrides::default()
        },
        Overrides {
            task_type: Some("ps".into()),
            ..Overrides::default()
        },
        Overrides {
            environment: Some(String::new()),
            ..Overrides::default()
        },
    ] {
        cases.push(Case::with(two, overrides));
    }
    cases
}

/// Generated documents: a cluster over [`JOBS`], a task (type as a string or, rarely, a
/// number; index as a number or a string), optional keys, optional overrides.
fn generated(n: usize) -> Vec<Case> {
    let task_type = prop::option::weighted(
        0.85,
        prop_oneof![
            8 => prop::sample::select(JOBS).prop_map(|j| json!(j)),
            1 => Just(json!(7)),
        ],
    );
    let task_index = prop::option::weighted(
        0.85,
        prop_oneof![
            3 => (0u32..4).prop_map(|i| json!(i)),
            1 => (0u32..4).prop_map(|i| json!(i.to_string())),
        ],
    );
    let optional =
        |values: &'static [&'static str]| prop::option::weighted(0.3, prop::sample::select(values));
    let doc = (
        prop::option::weighted(0.95, cluster_of(JOBS, 3)),
        prop::option::weighted(0.9, (task_type, task_index)),
        optional(RPC_LAYERS),
        optional(SESSION_MASTERS),
        optional(ENVIRONMENTS),
        any::<bool>(),
    )
        .prop_map(
            |(cluster, task, rpc_layer, session_master, environment, pretty)| {
                document(
                    cluster,
                    task,
                    rpc_layer,
                    session_master,
                    environment,
                    pretty,
                )
            },
        );
    let overrides = (
        prop::option::weighted(0.15, prop::sample::select(JOBS)),
        prop::option::weighted(0.15, 0u32..3),
        prop::option::weighted(0.15, prop::sample::select(RPC_LAYER_OVERRIDES)),
        prop::option::weighted(0.1, prop::sample::select(ENVIRONMENT_OVERRIDES)),
    )
        .prop_map(|(t, i, l, e)| Overrides {
            task_type: t.map(str::to_owned),
            task_id: i,
            rpc_layer: l.map(str::to_owned),
            environment: e.map(str::to_owned),
        });
    sample((doc, overrides), n)
        .into_iter()
        .map(|(doc, overrides)| Case::with(&doc, overrides))
        .collect()
}

fn document(
    cluster: Option<Cluster>,
    task: Option<(Option<Value>, Option<Value>)>,
    rpc_layer: Option<&str>,
    session_master: Option<&str>,
    environment: Option<&str>,
    pretty: bool,
) -> String {
    let mut keys = Vec::new();
    if let Some(cluster) = cluster {
        keys.push(format!("\"cluster\": {}", cluster.to_json()));
    }
    if let Some((t, i)) = task {
        let mut task = serde_json::Map::new();
        if let Some(t) = t {
            task.insert("type".into(), t);
        }
        if let Some(i) = i {
            task.insert("index".into(), i);
        }
        keys.push(format!("\"task\": {}", Value::Object(task)));
    }
    for (key, value) in [
        ("rpc_layer", rpc_layer),
        ("session_master", session_master),
        ("environment", environment),
    ] {
        if let Some(v) = value {
            keys.push(format!("{key:?}: {v:?}"));
        }
    }
    let separator = if pretty { ",\n  " } else { ", " };
    format!("{{{}}}", keys.join(separator))
}

/// A document TensorFlow reads one way and we another, and how.
struct Difference {
    tf_config: &'static str,
    /// The field compared: `spec`, `task_type`, `task_id`.
    field: &'static str,
    /// TensorFlow's answer: `Ok(value)` or `Err(exception class)`.
    tf: Result<Value, &'static str>,
    /// Ours: `Ok(value)` or `Err(part of our message)`.
    ours: Result<Value, &'static str>,
}

/// Every documented difference of the TF_CONFIG reader (see the module docs of `tf_config`).
fn differences() -> Vec<Difference> {
    let d = |tf_config, field, tf, ours| Difference {
        tf_config,
        field,
        tf,
        ours,
    };
    let worker_spec = json!({"worker": ["a:1", "b:1"]});
    vec![
        // Empty is unset here; TensorFlow's json.loads('') fails.
        d("", "spec", Err("JSONDecodeError"), Ok(json!({}))),
        d("  \n", "spec", Err("JSONDecodeError"), Ok(json!({}))),
        // task.index values Python's int() takes.
        d(
            r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": -1}}"#,
            "task_id",
            Ok(json!(-1)),
            Ok(Value::Null),
        ),
        d(
            r#"{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": -1}}"#,
            "spec",
            Ok(worker_spec.clone()),
            Err("integer `-1`, expected `task.index`"),
        ),
        d(
            r#"{"task": {"index": 1.7}}"#,
            "task_id",
            Ok(json!(1)),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"index": 1.7}}"#,
            "spec",
            Ok(json!({})),
            Err("floating point `1.7`"),
        ),
        d(
            r#"{"task": {"index": " 1"}}"#,
            "spec",
            Ok(json!({})),
            Err(r#"string " 1""#),
        ),
        d(
            r#"{"task": {"index": "+1"}}"#,
            "task_id",
            Ok(json!(1)),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"index": "1_0"}}"#,
            "task_id",
            Ok(json!(10)),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"index": true}}"#,
            "spec",
            Ok(json!({})),
            Err("boolean `true`"),
        ),
        d(
            r#"{"task": {"index": "x"}}"#,
            "task_id",
            Err("ValueError"),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"index": null}}"#,
            "task_id",
            Err("TypeError"),
            Ok(Value::Null),
        ),
        // task.type values Python's str() takes.
        d(
            r#"{"task": {"type": null}}"#,
            "task_type",
            Ok(json!("None")),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"type": true}}"#,
            "task_type",
            Ok(json!("True")),
            Ok(Value::Null),
        ),
        d(
            r#"{"task": {"type": true}}"#,
            "spec",
            Ok(json!({})),
            Err("`task.type` to be a string"),
        ),
        // A task that is not an object: `'type' in "worker"` is a substring test.
        d(
            r#"{"task": "worker"}"#,
            "spec",
            Ok(json!({})),
            Err("`task` to be an object"),
        ),
        // Not an object at all: `'cluster' in []` is simply false.
        d(
            "[]",
            "spec",
            Ok(json!({})),
            Err("TF_CONFIG to be a JSON object"),
        ),
        // Keys given twice: Python keeps the last.
        d(
            r#"{"cluster": {"worker": ["a:1"]}, "cluster": {"ps": ["p:1"]}}"#,
            "spec",
            Ok(json!({"ps": ["p:1"]})),
            Err("duplicate field `cluster`"),
        ),
        // A null cluster is no cluster here; TensorFlow's ClusterSpec(None) fails.
        d(
            r#"{"cluster": null}"#,
            "spec",
            Err("TypeError"),
            Ok(json!({})),
        ),
        // Non-string rpc_layer / session_master.
        d(
            r#"{"rpc_layer": 5}"#,
            "spec",
            Ok(json!({})),
            Err("`rpc_layer` to be a string"),
        ),
        // Clusters TensorFlow's Python accepts and its runtime cannot use (cluster-spec rules).
        d(
            r#"{"cluster": {"worker": ["localhost"]}}"#,
            "spec",
            Ok(json!({"worker": ["localhost"]})),
            Err("invalid address \"localhost\" for task 0 of job 'worker'"),
        ),
        d(
            r#"{"cluster": {"my-job": ["a:1"]}}"#,
            "spec",
            Ok(json!({"my-job": ["a:1"]})),
            Err("invalid job name \"my-job\""),
        ),
        d(
            r#"{"cluster": {"worker": {"-1": "a:1"}}}"#,
            "spec",
            Ok(json!({"worker": {"-1": "a:1"}})),
            Err("invalid task index \"-1\" in job 'worker'"),
        ),
        d(
            r#"{"cluster": {"worker": {"1": "a:1", "01": "b:1"}}}"#,
            "spec",
            Ok(json!({"worker": {"1": "b:1"}})),
            Err("job 'worker' specifies two addresses for task 1"),
        ),
        // Rejected by both (different exceptions, same verdict).
        d(
            "{not json",
            "spec",
            Err("JSONDecodeError"),
            Err("line 1, column 2"),
        ),
        d(
            r#"{"cluster": {"worker": "a:1"}}"#,
            "spec",
            Err("TypeError"),
            Err("invalid type: string"),
        ),
    ]
}

const SCRIPT: &str = r#"
from tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver import TFConfigClusterResolver
from tensorflow.python.distribute import multi_worker_util as mwu

out = []
for c in cases:
    if c["tf_config"] is None:
        os.environ.pop("TF_CONFIG", None)
    else:
        os.environ["TF_CONFIG"] = c["tf_config"]
    o = c["overrides"]
    r = TFConfigClusterResolver(task_type=o["task_type"], task_id=o["task_id"],
                                rpc_layer=o["rpc_layer"], environment=o["environment"])
    res = {
        "spec": attempt(lambda: spec_json(r.cluster_spec())),
        "jobs": attempt(lambda: r.cluster_spec().jobs),
        "task_type": attempt(lambda: r.task_type),
        "task_id": attempt(lambda: r.task_id),
        "rpc_layer": attempt(lambda: r.rpc_layer),
        "environment": attempt(lambda: r.environment),
        "master": [attempt(lambda a=a: r.master(*a)) for a in c["master_args"]],
    }
    try:
        spec, t, i = r.cluster_spec(), r.task_type, r.task_id
        res["is_chief"] = attempt(lambda: mwu.is_chief(spec, t, i))
        res["worker_count"] = attempt(lambda: mwu.worker_count(spec, t))
        res["id_in_cluster"] = attempt(lambda: mwu.id_in_cluster(spec, t, i))
        res["collective_leader"] = attempt(lambda: mwu.collective_leader(spec, t, i))
        res["coordination_leader"] = attempt(lambda: mwu.coordination_leader(spec))
    except Exception:
        pass
    out.append(res)
print(json.dumps(out))
"#;

/// Our answers to the calls the script makes.
struct Ours {
    spec: Result<Value, Error>,
    jobs: Result<Value, Error>,
    task_type: Value,
    task_id: Value,
    rpc_layer: Value,
    environment: String,
    master: Vec<Result<String, Error>>,
    multi_worker: Option<Vec<(&'static str, Result<Value, multi_worker::Error>)>>,
}

fn ours(case: &Case) -> Ours {
    let r = case.resolver();
    let spec = block_on(r.cluster_spec());
    let (t, i) = (r.task_type(), r.task_id());
    let multi_worker = spec.as_ref().ok().map(|s| {
        let t = t.as_deref();
        vec![
            ("is_chief", is_chief(s, t, i).map(Value::from)),
            ("worker_count", worker_count(s, t).map(Value::from)),
            ("id_in_cluster", id_in_cluster(s, t, i).map(Value::from)),
            (
                "collective_leader",
                collective_leader(s, t, i).map(Value::from),
            ),
            (
                "coordination_leader",
                coordination_leader(s).map(Value::from),
            ),
        ]
    });
    Ours {
        jobs: spec.as_ref().map(|s| json!(s.jobs())).map_err(clone_error),
        spec: spec.map(|s| serde_json::from_str(&s.to_json()).unwrap()),
        task_type: json!(t),
        task_id: json!(i),
        rpc_layer: json!(r.rpc_layer()),
        environment: r.environment(),
        master: MASTER_ARGS
            .iter()
            .map(|(t, i, l)| block_on(r.master(*t, *i, *l)))
            .collect(),
        multi_worker,
    }
}

/// Our error enum is not `Clone` (it may hold I/O errors); its message is what is compared.
fn clone_error(e: &Error) -> Error {
    Error::InvalidVariable {
        name: "TF_CONFIG".into(),
        value: String::new(),
        reason: e.to_string(),
    }
}

fn compare_value(tally: &mut Tally, what: &str, tf: &Value, ours: &Result<Value, Error>) {
    match (answer(tf), ours) {
        (Answer::Ok(tf), Ok(ours)) => {
            assert_eq!(tf, ours, "{what}");
            tally.same += 1;
        }
        (Answer::Err { class, msg }, Err(e)) => {
            panic!("{what}: both fail, unexpectedly: TensorFlow {class}: {msg}; ours: {e}")
        }
        (tf, ours) => panic!("{what}: TensorFlow {tf:?}, ours {ours:?}"),
    }
}

fn compare_master(tally: &mut Tally, what: &str, tf: &Value, ours: &Result<String, Error>) {
    match (answer(tf), ours) {
        (Answer::Ok(tf), Ok(ours)) => {
            assert_eq!(tf, ours, "{what}");
            tally.same += 1;
        }
        // A single job with no tasks: TensorFlow's max() of nothing.
        (Answer::Err { msg, .. }, Err(_)) if msg.contains("max() arg is an empty sequence") => {
            tally.documented += 1
        }
        (Answer::Err { msg, .. }, Err(Error::TfConfigNoTask { field })) => {
            let expected = match *field {
                "task.type" => "No such job in cluster: None",
                _ => "No task with index None in job",
            };
            assert!(
                msg.starts_with(expected),
                "{what}: TensorFlow says {msg}, ours {field}"
            );
            tally.documented += 1;
        }
        (Answer::Err { class, msg }, Err(e)) => {
            assert_eq!(
                (class, msg),
                ("ValueError", e.to_string().as_str()),
                "{what}"
            );
            tally.same += 1;
        }
        (tf, ours) => panic!("{what}: TensorFlow {tf:?}, ours {ours:?}"),
    }
}

fn compare_case(tally: &mut Tally, case: &Case, tf: &Value) {
    let what = format!(
        "TF_CONFIG={:?} overrides={:?}",
        case.tf_config, case.overrides
    );
    let o = ours(case);
    compare_value(tally, &format!("{what}: spec"), &tf["spec"], &o.spec);
    compare_value(tally, &format!("{what}: jobs"), &tf["jobs"], &o.jobs);
    for (field, ours) in [
        ("task_type", &o.task_type),
        ("task_id", &o.task_id),
        ("rpc_layer", &o.rpc_layer),
    ] {
        compare_value(
            tally,
            &format!("{what}: {field}"),
            &tf[field],
            &Ok(ours.clone()),
        );
    }
    // TensorFlow's default environment is None; the trait's is "".
    let tf_environment = match answer(&tf["environment"]) {
        Answer::Ok(Value::Null) => String::new(),
        Answer::Ok(Value::String(s)) => s.clone(),
        other => panic!("{what}: environment {other:?}"),
    };
    assert_eq!(tf_environment, o.environment, "{what}: environment");
    tally.same += 1;
    let tf_master = tf_oracle::one_per_case(&tf["master"], MASTER_ARGS.len());
    for ((args, tf), ours) in MASTER_ARGS.iter().zip(tf_master).zip(&o.master) {
        compare_master(tally, &format!("{what}: master{args:?}"), tf, ours);
    }
    let multi_worker = o.multi_worker.expect("the spec resolved");
    for (name, ours) in &multi_worker {
        compare_multi_worker(tally, &format!("{what}: {name}"), &tf[*name], ours);
    }
}

fn check_difference(tally: &mut Tally, d: &Difference, tf: &Value) {
    let what = format!("TF_CONFIG={:?}: {}", d.tf_config, d.field);
    match (&d.tf, answer(&tf[d.field])) {
        (Ok(expected), Answer::Ok(got)) => assert_eq!(expected, got, "{what}: TensorFlow"),
        (Err(class), Answer::Err { class: got, .. }) => {
            assert_eq!(class, &got, "{what}: TensorFlow")
        }
        (expected, got) => panic!("{what}: TensorFlow answered {got:?}, documented {expected:?}"),
    }
    let o = ours(&Case::plain(d.tf_config));
    let got: Result<Value, String> = match d.field {
        "spec" => o.spec.map_err(|e| e.to_string()),
        "task_type" => Ok(o.task_type),
        "task_id" => Ok(o.task_id),
        other => panic!("no field {other}"),
    };
    match (&d.ours, &got) {
        (Ok(expected), Ok(got)) => assert_eq!(expected, got, "{what}: ours"),
        (Err(part), Err(message)) => {
            assert!(
                message.contains(part),
                "{what}: ours is {message:?}, documented {part:?}"
            )
        }
        (expected, got) => panic!("{what}: ours is {got:?}, documented {expected:?}"),
    }
    tally.documented += 1;
}

#[test]
fn tf_config_resolver_and_multi_worker_rules_match_tensorflow() {
    let mut cases = hand_picked();
    let hand_picked = cases.len();
    cases.extend(generated(400));
    let differences = differences();
    let mut input: Vec<Value> = cases.iter().map(Case::to_json).collect();
    input.extend(
        differences
            .iter()
            .map(|d| Case::plain(d.tf_config).to_json()),
    );

    let results = tf_cases::run(SCRIPT, &Value::from(input));

    let mut tally = Tally::default();
    let rest = tally.compare_each(&cases, &results, differences.len(), compare_case);
    for (d, tf) in differences.iter().zip(rest) {
        check_difference(&mut tally, d, tf);
    }
    tally.report(&format!(
        "TF_CONFIG: {hand_picked} hand-picked + {} generated documents, {} documented differences",
        cases.len() - hand_picked,
        differences.len()
    ));
    assert!(tally.same > 5_000, "too few comparisons: {tally:?}");
}
