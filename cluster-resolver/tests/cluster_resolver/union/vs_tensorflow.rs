//! Differential test against TensorFlow 2.21: `UnionResolver` of one to three
//! `SimpleClusterResolver`s (each with its own spec, master, task, RPC layer, environment and
//! accelerators) and optional union overrides — merged spec (or duplicate-key error), jobs,
//! task type and id, RPC layer, environment, accelerators and six `master(...)` calls — in one
//! python run over hand-picked and generated cases.
//!
//! The one documented difference that shows here: a falsy override (task id 0, task type or
//! RPC layer `""`) is used by ours and ignored by TensorFlow's `or`.

use std::collections::BTreeMap;

use cluster_resolver::{
    ClusterResolver, Error, SimpleClusterResolver, UnionClusterResolver, union,
};
use cluster_spec::ClusterSpec;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cluster_resolver::runtime::block_on;
use crate::cluster_resolver::strategies::{cluster_of, sample};
use crate::cluster_resolver::tf_cases::{self, Answer, Tally, answer};

const JOBS: &[&str] = &["worker", "ps", "chief"];
const MASTERS: &[&str] = &["", "grpc://m:1", "local"];
const TASK_TYPES: &[&str] = &["worker", "ps", ""];
const LAYERS: &[&str] = &["grpc", ""];
const ENVIRONMENTS: &[&str] = &["", "google"];

const MASTER_ARGS: &[(Option<&str>, Option<u32>, Option<&str>)] = &[
    (None, None, None),
    (None, None, Some("grpc")),
    (Some("worker"), Some(0), None),
    (Some("ps"), Some(1), Some("x")),
    (Some("worker"), None, None),
    (Some("nope"), Some(0), None),
];

#[derive(Debug, Clone)]
struct Child {
    spec: String,
    master: &'static str,
    task_type: Option<&'static str>,
    task_id: Option<u32>,
    rpc_layer: Option<&'static str>,
    environment: &'static str,
    num_accelerators: Option<BTreeMap<String, u32>>,
}

#[derive(Debug, Clone, Default)]
struct Overrides {
    task_type: Option<&'static str>,
    task_id: Option<u32>,
    rpc_layer: Option<&'static str>,
}

#[derive(Debug, Clone)]
struct Case {
    children: Vec<Child>,
    overrides: Overrides,
}

impl Child {
    fn new(spec: &str) -> Self {
        Child {
            spec: spec.to_owned(),
            master: "",
            task_type: None,
            task_id: None,
            rpc_layer: None,
            environment: "",
            num_accelerators: None,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            // As text: a serde_json `Value` would sort the jobs, whose order is compared.
            "spec": self.spec,
            "master": self.master,
            "task_type": self.task_type,
            "task_id": self.task_id,
            "rpc_layer": self.rpc_layer,
            "environment": self.environment,
            "num_accelerators": self.num_accelerators,
        })
    }

    fn resolver(&self) -> SimpleClusterResolver {
        let mut r = SimpleClusterResolver::new(ClusterSpec::from_json(&self.spec).unwrap())
            .with_master(self.master)
            .with_environment(self.environment);
        r.set_task(self.task_type.map(str::to_owned), self.task_id);
        r.set_rpc_layer(self.rpc_layer.map(str::to_owned));
        if let Some(counts) = &self.num_accelerators {
            r = r.with_num_accelerators(counts.clone());
        }
        r
    }
}

impl Case {
    fn to_json(&self) -> Value {
        json!({
            "children": self.children.iter().map(Child::to_json).collect::<Vec<_>>(),
            "overrides": {
                "task_type": self.overrides.task_type,
                "task_id": self.overrides.task_id,
                "rpc_layer": self.overrides.rpc_layer,
            },
            "master_args": MASTER_ARGS.iter().map(|(t, i, l)| json!([t, i, l])).collect::<Vec<_>>(),
        })
    }

    fn union(&self) -> Result<UnionClusterResolver, Error> {
        let children = self
            .children
            .iter()
            .map(|c| Box::new(c.resolver()) as Box<dyn ClusterResolver>);
        let mut union = UnionClusterResolver::from_resolvers(children)?;
        union.set_task_type(self.overrides.task_type.map(str::to_owned));
        union.set_task_id(self.overrides.task_id);
        union.set_rpc_layer(self.overrides.rpc_layer.map(str::to_owned));
        Ok(union)
    }
}

fn hand_picked() -> Vec<Case> {
    let case = |specs: &[&str]| Case {
        children: specs.iter().map(|s| Child::new(s)).collect(),
        overrides: Overrides::default(),
    };
    let mut cases = vec![
        // TensorFlow's docstring example, and its test cases' shapes.
        case(&[
            r#"{"worker": ["w0:2222", "w1:2222"]}"#,
            r#"{"ps": ["ps0:2222", "ps1:2222"]}"#,
        ]),
        case(&[
            r#"{"worker": ["a:1", "b:1"]}"#,
            r#"{"worker": ["c:1"], "ps": ["p:1"]}"#,
        ]),
        case(&[
            r#"{"worker": {"3": "a:1"}}"#,
            r#"{"worker": ["b:1", "c:1"]}"#,
        ]),
        case(&[
            r#"{"worker": ["a:1", "b:1"]}"#,
            r#"{"worker": {"1": "c:1", "7": "d:1"}}"#,
        ]),
        case(&[
            r#"{"ps": {"1": "a:1", "9": "b:1"}}"#,
            r#"{"ps": {"1": "c:1", "9": "d:1", "4": "e:1"}}"#,
        ]),
        // An empty job turns the lists into dicts, which then collide at 0.
        case(&[
            r#"{"worker": ["a:1"]}"#,
            r#"{"worker": []}"#,
            r#"{"worker": ["b:1"]}"#,
        ]),
        case(&[r#"{"worker": []}"#, r#"{"worker": {"2": "b:1"}}"#]),
        case(&[r#"{}"#, r#"{"worker": ["a:1"]}"#]),
        case(&[r#"{"chief": ["c:1"]}"#]),
    ];
    let mut first = Child::new(r#"{"worker": ["a:1", "b:1"]}"#);
    first.master = "grpc://m:1";
    first.task_type = Some("worker");
    first.task_id = Some(1);
    first.rpc_layer = Some("grpc");
    first.environment = "google";
    first.num_accelerators = Some(BTreeMap::from([("GPU".to_owned(), 2)]));
    let second = Child::new(r#"{"ps": ["p0:1", "p1:1"]}"#);
    for overrides in [
        Overrides::default(),
        Overrides {
            task_type: Some("ps"),
            task_id: Some(1),
            rpc_layer: Some("x"),
        },
        Overrides {
            task_id: Some(0),
            ..Overrides::default()
        },
        Overrides {
            task_type: Some(""),
            rpc_layer: Some(""),
            ..Overrides::default()
        },
    ] {
        cases.push(Case {
            children: vec![first.clone(), second.clone()],
            overrides,
        });
    }
    cases
}

fn generated(n: usize) -> Vec<Case> {
    let child = (
        cluster_of(JOBS, 3),
        prop::sample::select(MASTERS),
        prop::option::weighted(0.5, prop::sample::select(TASK_TYPES)),
        prop::option::weighted(0.5, 0u32..3),
        prop::option::weighted(0.4, prop::sample::select(LAYERS)),
        prop::sample::select(ENVIRONMENTS),
        prop::option::weighted(
            0.3,
            (0u32..4).prop_map(|n| BTreeMap::from([("GPU".to_owned(), n)])),
        ),
    )
        .prop_map(
            |(cluster, master, task_type, task_id, rpc_layer, environment, num_accelerators)| {
                Child {
                    spec: cluster.to_json(),
                    master,
                    task_type,
                    task_id,
                    rpc_layer,
                    environment,
                    num_accelerators,
                }
            },
        );
    let overrides = (
        prop::option::weighted(0.2, prop::sample::select(TASK_TYPES)),
        prop::option::weighted(0.2, 0u32..3),
        prop::option::weighted(0.2, prop::sample::select(LAYERS)),
    )
        .prop_map(|(task_type, task_id, rpc_layer)| Overrides {
            task_type,
            task_id,
            rpc_layer,
        });
    sample((prop::collection::vec(child, 1..4), overrides), n)
        .into_iter()
        .map(|(children, overrides)| Case {
            children,
            overrides,
        })
        .collect()
}

const SCRIPT: &str = r#"
from tensorflow.python.distribute.cluster_resolver.cluster_resolver import SimpleClusterResolver, UnionClusterResolver

out = []
for c in cases:
    children = [SimpleClusterResolver(tf.train.ClusterSpec(json.loads(ch["spec"])), master=ch["master"],
                                      task_type=ch["task_type"], task_id=ch["task_id"],
                                      environment=ch["environment"],
                                      num_accelerators=ch["num_accelerators"],
                                      rpc_layer=ch["rpc_layer"])
                for ch in c["children"]]
    made = attempt(lambda: UnionClusterResolver(*children, **{k: v for k, v in c["overrides"].items() if v is not None}))
    if "err" in made:
        out.append({"union": made})
        continue
    u = UnionClusterResolver(*children, **{k: v for k, v in c["overrides"].items() if v is not None})
    out.append({
        "union": {"ok": True},
        "spec": attempt(lambda: spec_json(u.cluster_spec())),
        "jobs": attempt(lambda: u.cluster_spec().jobs),
        "task_type": attempt(lambda: u.task_type),
        "task_id": attempt(lambda: u.task_id),
        "rpc_layer": attempt(lambda: u.rpc_layer),
        "environment": attempt(lambda: u.environment),
        "num_accelerators": attempt(lambda: dict(u.num_accelerators())),
        "master": [attempt(lambda a=a: u.master(*a)) for a in c["master_args"]],
    })
print(json.dumps(out))
"#;

/// The repeated keys of TensorFlow's `Duplicate keys detected when merging two ClusterSpecs:
/// {7, 1}` message, sorted.
fn keys_of(msg: &str) -> Vec<u32> {
    let inner = msg
        .rsplit_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(k, _)| k);
    let mut keys: Vec<u32> = inner
        .unwrap_or_else(|| panic!("no key set in {msg:?}"))
        .split(", ")
        .map(|k| k.parse().unwrap())
        .collect();
    keys.sort_unstable();
    keys
}

fn compare_case(tally: &mut Tally, case: &Case, tf: &Value) {
    let what = format!("{case:?}");
    let union = case.union().unwrap();
    // Spec: equal, or the same duplicate keys.
    match (answer(&tf["spec"]), block_on(union.cluster_spec())) {
        (Answer::Ok(tf_spec), Ok(ours)) => {
            assert_eq!(
                tf_spec,
                &serde_json::from_str::<Value>(&ours.to_json()).unwrap(),
                "{what}"
            );
            assert_eq!(
                answer(&tf["jobs"]).ok(),
                Some(&json!(ours.jobs())),
                "{what}: jobs"
            );
            tally.same += 2;
        }
        (
            Answer::Err {
                class: "KeyError",
                msg,
            },
            Err(Error::Union(union::Error::DuplicateTasks { tasks, .. })),
        ) => {
            assert_eq!(keys_of(msg), tasks, "{what}");
            tally.same += 1;
        }
        (tf, ours) => panic!("{what}: spec: TensorFlow {tf:?}, ours {ours:?}"),
    }
    // Properties, with the falsy-override difference.
    let first = &case.children[0];
    // (field, ours, the override if falsy, the first resolver's value)
    let fields: [(&str, Value, Option<Value>, Value); 3] = [
        (
            "task_type",
            json!(union.task_type()),
            case.overrides
                .task_type
                .filter(|t| t.is_empty())
                .map(|t| json!(t)),
            json!(first.task_type),
        ),
        (
            "task_id",
            json!(union.task_id()),
            case.overrides.task_id.filter(|&i| i == 0).map(|i| json!(i)),
            json!(first.task_id),
        ),
        (
            "rpc_layer",
            json!(union.rpc_layer()),
            case.overrides
                .rpc_layer
                .filter(|l| l.is_empty())
                .map(|l| json!(l)),
            json!(first.rpc_layer),
        ),
    ];
    for (field, ours, falsy_override, first_value) in fields {
        let Answer::Ok(tf_value) = answer(&tf[field]) else {
            panic!("{what}: {field}: {}", tf[field]);
        };
        match falsy_override {
            // TensorFlow's `override or first` drops a falsy override; ours keeps it.
            Some(value) => {
                assert_eq!(tf_value, &first_value, "{what}: {field}: TensorFlow");
                assert_eq!(ours, value, "{what}: {field}: ours");
                if tf_value == &ours {
                    tally.same += 1;
                } else {
                    tally.documented += 1;
                }
            }
            None => {
                assert_eq!(tf_value, &ours, "{what}: {field}");
                tally.same += 1;
            }
        }
    }
    assert_eq!(
        answer(&tf["environment"]).ok(),
        Some(&json!(union.environment())),
        "{what}"
    );
    let ours_accelerators = block_on(union.num_accelerators(None, None)).unwrap();
    assert_eq!(
        answer(&tf["num_accelerators"]).ok(),
        Some(&json!(ours_accelerators)),
        "{what}"
    );
    tally.same += 2;
    let tf_master = tf_oracle::one_per_case(&tf["master"], MASTER_ARGS.len());
    for ((t, i, l), tf) in MASTER_ARGS.iter().zip(tf_master) {
        let what = format!("{what}: master({t:?}, {i:?}, {l:?})");
        match (answer(tf), block_on(union.master(*t, *i, *l))) {
            (Answer::Ok(tf), Ok(ours)) => assert_eq!(tf, &json!(ours), "{what}"),
            (
                Answer::Err {
                    class: "ValueError",
                    msg,
                },
                Err(e),
            ) => assert_eq!(msg, e.to_string(), "{what}"),
            (
                Answer::Err {
                    class: "KeyError",
                    msg,
                },
                Err(Error::Union(union::Error::DuplicateTasks { tasks, .. })),
            ) => {
                assert_eq!(keys_of(msg), tasks, "{what}")
            }
            (tf, ours) => panic!("{what}: TensorFlow {tf:?}, ours {ours:?}"),
        }
        tally.same += 1;
    }
}

#[test]
fn union_resolver_matches_tensorflow() {
    let mut cases = hand_picked();
    let hand_picked = cases.len();
    cases.extend(generated(300));
    let mut input: Vec<Value> = cases.iter().map(Case::to_json).collect();
    // No resolvers at all.
    input.push(json!({"children": [], "overrides": {}, "master_args": []}));
    let results = tf_cases::run(SCRIPT, &Value::from(input));

    let mut tally = Tally::default();
    let rest = tally.compare_each(&cases, &results, 1, compare_case);
    let Answer::Err { class, msg } = answer(&rest[0]["union"]) else {
        panic!("TensorFlow accepted a union of nothing");
    };
    let ours = UnionClusterResolver::from_resolvers(Vec::new()).unwrap_err();
    assert_eq!((class, msg), ("ValueError", ours.to_string().as_str()));
    tally.same += 1;
    let clashes = results
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["spec"].get("err").is_some())
        .count();
    tally.report(&format!(
        "UnionResolver: {hand_picked} hand-picked + {} generated unions ({clashes} with duplicate keys)",
        cases.len() - hand_picked
    ));
    assert!(
        clashes > 10,
        "the generated cases should exercise duplicate keys"
    );
}
