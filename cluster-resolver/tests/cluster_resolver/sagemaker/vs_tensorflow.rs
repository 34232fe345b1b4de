//! Differential test against TensorFlow 2.21's `SageMakerClusterResolver` (not exported as
//! `tf.distribute`; imported from its module): for each case the script sets `SM_HOSTS` and
//! `SM_CURRENT_HOST` in `os.environ` and compares spec, jobs, task type and id, RPC layer,
//! environment and six `master(...)` calls, for hand-picked and generated host lists, ports
//! and overrides. Environments TensorFlow reads silently and we reject are asserted as
//! documented differences.

use cluster_resolver::{ClusterResolver, Env, Error, SageMakerClusterResolver};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cluster_resolver::runtime::block_on;
use crate::cluster_resolver::strategies::sample;
use crate::cluster_resolver::tf_cases::{self, Answer, Tally, answer};

const HOSTS: &[&str] = &[
    "algo-1",
    "algo-2",
    "algo-3",
    "algo-10",
    "10.0.0.7",
    "host.example",
];
const PORTS: &[Option<u16>] = &[None, Some(2223), Some(8470), Some(0)];
const LAYERS: &[&str] = &["grpc", ""];
const TASK_TYPES: &[&str] = &["worker", "chief"];

const MASTER_ARGS: &[(Option<&str>, Option<u32>, Option<&str>)] = &[
    (None, None, None),
    (None, None, Some("grpc")),
    (Some("worker"), Some(0), None),
    (Some("worker"), None, None),
    (None, Some(5), None),
    (Some("ps"), Some(0), None),
];

#[derive(Debug, Clone, Default)]
struct Case {
    sm_hosts: Option<String>,
    sm_current_host: Option<String>,
    port: Option<u16>,
    task_type: Option<&'static str>,
    task_id: Option<u32>,
    rpc_layer: Option<&'static str>,
    environment: Option<&'static str>,
}

impl Case {
    fn new(hosts: &[&str], current: &str) -> Self {
        Case {
            sm_hosts: Some(serde_json::to_string(hosts).unwrap()),
            sm_current_host: Some(current.to_owned()),
            ..Case::default()
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "SM_HOSTS": self.sm_hosts,
            "SM_CURRENT_HOST": self.sm_current_host,
            "port": self.port,
            "kwargs": {
                "task_type": self.task_type,
                "task_id": self.task_id,
                "rpc_layer": self.rpc_layer,
                "environment": self.environment,
            },
            "master_args": MASTER_ARGS.iter().map(|(t, i, l)| json!([t, i, l])).collect::<Vec<_>>(),
        })
    }

    fn resolver(&self) -> SageMakerClusterResolver {
        let vars = [
            ("SM_HOSTS", &self.sm_hosts),
            ("SM_CURRENT_HOST", &self.sm_current_host),
        ];
        let env: Env = vars
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.clone()?)))
            .collect();
        let mut r = SageMakerClusterResolver::new(env);
        if let Some(port) = self.port {
            r = r.with_port(port);
        }
        r.set_task_type(self.task_type.map(str::to_owned));
        r.set_task_id(self.task_id);
        r.set_rpc_layer(self.rpc_layer.map(str::to_owned));
        if let Some(environment) = self.environment {
            r = r.with_environment(environment);
        }
        r
    }
}

fn hand_picked() -> Vec<Case> {
    let mut cases = vec![
        Case::new(&["algo-1"], "algo-1"),
        Case::new(&["algo-2", "algo-1"], "algo-1"),
        Case::new(&["algo-3", "algo-1", "algo-2"], "algo-3"),
        // String order, as Python's sorted(): algo-10 < algo-2.
        Case::new(&["algo-2", "algo-10", "algo-1"], "algo-2"),
        Case::new(&["10.0.0.7", "host.example"], "host.example"),
    ];
    let mut c = Case::new(&["algo-1", "algo-2"], "algo-2");
    c.port = Some(8470);
    c.rpc_layer = Some("grpc");
    cases.push(c);
    let mut c = Case::new(&["algo-1", "algo-2"], "algo-2");
    c.task_id = Some(0);
    c.task_type = Some("worker");
    c.environment = Some("google");
    cases.push(c);
    let mut c = Case::new(&["algo-1", "algo-2"], "algo-1");
    c.task_type = Some("chief");
    cases.push(c);
    cases
}

fn generated(n: usize) -> Vec<Case> {
    let case = (
        prop::sample::subsequence(HOSTS, 1..=HOSTS.len()).prop_shuffle(),
        any::<prop::sample::Index>(),
        prop::sample::select(PORTS),
        prop::option::weighted(0.1, prop::sample::select(TASK_TYPES)),
        prop::option::weighted(0.2, 0u32..4),
        prop::option::weighted(0.3, prop::sample::select(LAYERS)),
    )
        .prop_map(|(hosts, current, port, task_type, task_id, rpc_layer)| {
            let current = *current.get(&hosts);
            Case {
                port,
                task_type,
                task_id,
                rpc_layer,
                ..Case::new(&hosts, current)
            }
        });
    sample(case, n)
}

/// An environment TensorFlow reads without complaint and we reject, with what each says.
struct Difference {
    case: Case,
    /// TensorFlow's `spec_json(cluster_spec())`, or its exception class.
    tf: Result<Value, &'static str>,
    /// Part of our error.
    ours: &'static str,
}

fn differences() -> Vec<Difference> {
    let raw = |hosts: Option<&str>, current: Option<&str>| Case {
        sm_hosts: hosts.map(str::to_owned),
        sm_current_host: current.map(str::to_owned),
        ..Case::default()
    };
    let d = |case, tf, ours| Difference { case, tf, ours };
    vec![
        // The current host is not in the list: TensorFlow's cluster is empty.
        d(
            Case::new(&["algo-1", "algo-2"], "algo-9"),
            Ok(json!({})),
            r#"SM_CURRENT_HOST="algo-9" is invalid: it is not one of the hosts of SM_HOSTS"#,
        ),
        d(
            raw(Some(""), Some("algo-1")),
            Ok(json!({})),
            "not one of the hosts of SM_HOSTS",
        ),
        // A host listed twice: TensorFlow gives two tasks one address.
        d(
            Case::new(&["algo-1", "algo-2", "algo-1"], "algo-2"),
            Ok(json!({"worker": ["algo-1:2223", "algo-1:2223", "algo-2:2223"]})),
            r#"host "algo-1" is listed twice"#,
        ),
        // Not a list of strings: TensorFlow sorts whatever json.loads gives.
        d(
            raw(Some(r#"{"algo-1": 1}"#), Some("algo-1")),
            Ok(json!({"worker": ["algo-1:2223"]})),
            "invalid type: map, expected a sequence",
        ),
        d(
            raw(Some("[1, 2]"), Some("1")),
            Ok(json!({})),
            "invalid type: integer `1`, expected a string",
        ),
        // Host names TensorFlow's Python accepts and its runtime cannot use.
        d(
            Case::new(&["algo 1", "algo-2"], "algo-2"),
            Ok(json!({"worker": ["algo 1:2223", "algo-2:2223"]})),
            r#"invalid address "algo 1:2223" for task 0 of job 'worker'"#,
        ),
        // Missing variables: both fail (TensorFlow's AssertionError: Not a SageMaker Environment).
        d(
            raw(None, Some("algo-1")),
            Err("AssertionError"),
            "environment variable SM_HOSTS is not set",
        ),
        d(
            raw(Some(r#"["algo-1"]"#), None),
            Err("AssertionError"),
            "environment variable SM_CURRENT_HOST is not set",
        ),
        d(
            raw(Some("[nope"), Some("algo-1")),
            Err("JSONDecodeError"),
            "environment variable SM_HOSTS is invalid at line 1, column 3: expected ident",
        ),
    ]
}

const SCRIPT: &str = r#"
from tensorflow.python.distribute.cluster_resolver.sagemaker_cluster_resolver import SageMakerClusterResolver

out = []
for c in cases:
    for var in ("SM_HOSTS", "SM_CURRENT_HOST"):
        if c[var] is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = c[var]
    kwargs = dict(c["kwargs"])
    if c["port"] is not None:
        kwargs["port"] = c["port"]
    r = SageMakerClusterResolver(**kwargs)
    out.append({
        "spec": attempt(lambda: spec_json(r.cluster_spec())),
        "jobs": attempt(lambda: r.cluster_spec().jobs),
        "task_type": attempt(lambda: r.task_type),
        "task_id": attempt(lambda: r.task_id),
        "rpc_layer": attempt(lambda: r.rpc_layer),
        "environment": attempt(lambda: r.environment),
        "master": [attempt(lambda a=a: r.master(*a)) for a in c["master_args"]],
    })
print(json.dumps(out))
"#;

fn compare_case(tally: &mut Tally, case: &Case, tf: &Value) {
    let what = format!("{case:?}");
    let r = case.resolver();
    let spec = block_on(r.cluster_spec()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let ours = [
        (
            "spec",
            serde_json::from_str::<Value>(&spec.to_json()).unwrap(),
        ),
        ("jobs", json!(spec.jobs())),
        ("task_type", json!(r.task_type())),
        ("task_id", json!(r.task_id())),
        ("rpc_layer", json!(r.rpc_layer())),
    ];
    for (field, ours) in ours {
        assert_eq!(answer(&tf[field]).ok(), Some(&ours), "{what}: {field}");
        tally.same += 1;
    }
    // TensorFlow's default environment is None; the trait's is "".
    let tf_environment = answer(&tf["environment"]).ok().cloned();
    let tf_environment = tf_environment
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    assert_eq!(tf_environment, r.environment(), "{what}: environment");
    tally.same += 1;
    let tf_master = tf_oracle::one_per_case(&tf["master"], MASTER_ARGS.len());
    for ((t, i, l), tf) in MASTER_ARGS.iter().zip(tf_master) {
        let what = format!("{what}: master({t:?}, {i:?}, {l:?})");
        match (answer(tf), block_on(r.master(*t, *i, *l))) {
            (Answer::Ok(tf), Ok(ours)) => assert_eq!(tf, &json!(ours), "{what}"),
            (
                Answer::Err {
                    class: "ValueError",
                    msg,
                },
                Err(e),
            ) => assert_eq!(msg, e.to_string(), "{what}"),
            (tf, ours) => panic!("{what}: TensorFlow {tf:?}, ours {ours:?}"),
        }
        tally.same += 1;
    }
}

fn check_difference(tally: &mut Tally, d: &Difference, tf: &Value) {
    let what = format!("{:?}", d.case);
    match (&d.tf, answer(&tf["spec"])) {
        (Ok(expected), Answer::Ok(got)) => assert_eq!(expected, got, "{what}: TensorFlow"),
        (Err(class), Answer::Err { class: got, .. }) => {
            assert_eq!(class, &got, "{what}: TensorFlow")
        }
        (expected, got) => panic!("{what}: TensorFlow answered {got:?}, documented {expected:?}"),
    }
    let r = d.case.resolver();
    let e = block_on(r.cluster_spec()).expect_err(&what);
    assert!(
        e.to_string().contains(d.ours),
        "{what}: ours is {e}, documented {:?}",
        d.ours
    );
    assert!(
        block_on(r.master(None, None, None)).is_err(),
        "{what}: master"
    );
    assert_eq!(
        (r.task_type(), r.task_id()),
        (None, None),
        "{what}: no task"
    );
    assert!(
        matches!(
            e,
            Error::InvalidVariable { .. }
                | Error::InvalidJsonVariable { .. }
                | Error::MissingVariable { .. }
        ),
        "{what}: {e:?}"
    );
    tally.documented += 1;
}

#[test]
fn sagemaker_resolver_matches_tensorflow() {
    let mut cases = hand_picked();
    let hand_picked = cases.len();
    cases.extend(generated(150));
    let differences = differences();
    let mut input: Vec<Value> = cases.iter().map(Case::to_json).collect();
    input.extend(differences.iter().map(|d| d.case.to_json()));
    let results = tf_cases::run(SCRIPT, &Value::from(input));

    let mut tally = Tally::default();
    let rest = tally.compare_each(&cases, &results, differences.len(), compare_case);
    for (d, tf) in differences.iter().zip(rest) {
        check_difference(&mut tally, d, tf);
    }
    tally.report(&format!(
        "SageMaker: {hand_picked} hand-picked + {} generated environments, {} documented differences",
        cases.len() - hand_picked,
        differences.len()
    ));
}
