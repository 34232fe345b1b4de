//! The chief / evaluator rules: properties over valid multi-worker clusters, and the
//! differential test of every rule against TensorFlow 2.21's `multi_worker_util` over a grid
//! of clusters × task types × task ids (valid and not).

use cluster_resolver::multi_worker::{
    self, collective_leader, coordination_leader, id_in_cluster, is_chief, worker_count,
};
use cluster_spec::ClusterSpec;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cluster_resolver::tf_cases::{self, Answer, Tally, answer};

/// A chief/worker cluster as TensorFlow's strategies use it: at most one chief, some workers,
/// maybe ps and an evaluator.
fn training_cluster() -> impl Strategy<Value = ClusterSpec> {
    (0usize..=1, 0usize..6, 0usize..3, 0usize..=1)
        .prop_filter("a chief or a worker", |(c, w, _, _)| c + w > 0)
        .prop_map(|(chief, workers, ps, evaluator)| {
            let addrs =
                |job: &str, n: usize| (0..n).map(|i| format!("{job}{i}:2222")).collect::<Vec<_>>();
            let mut b = ClusterSpec::builder();
            for (job, n) in [
                ("chief", chief),
                ("worker", workers),
                ("ps", ps),
                ("evaluator", evaluator),
            ] {
                if n > 0 {
                    b = b.job(job, addrs(job, n));
                }
            }
            b.build().unwrap()
        })
}

proptest! {
    /// Chief and workers get the ids 0..worker_count, each once; exactly one of them is chief,
    /// and it is the one with id 0; all agree on the collective leader.
    #[test]
    fn ids_are_a_bijection_and_there_is_one_chief(spec in training_cluster()) {
        let mut ids = Vec::new();
        let mut chiefs = Vec::new();
        let mut leaders = std::collections::BTreeSet::new();
        for job in ["chief", "worker"] {
            for (task, _) in spec.tasks(job).into_iter().flatten() {
                let id = id_in_cluster(&spec, job, task).unwrap();
                ids.push(id);
                if is_chief(&spec, job, task).unwrap() {
                    chiefs.push(id);
                }
                leaders.insert(collective_leader(&spec, job, task).unwrap());
                let trainers = spec.num_tasks("chief").unwrap_or(0) + spec.num_tasks("worker").unwrap_or(0);
                prop_assert_eq!(worker_count(&spec, job).unwrap(), trainers);
            }
        }
        ids.sort_unstable();
        let n = ids.len() as u32;
        prop_assert_eq!(ids, (0..n).collect::<Vec<_>>());
        prop_assert_eq!(chiefs, vec![0]);
        prop_assert_eq!(leaders.len(), 1);
        for (task, _) in spec.tasks("ps").into_iter().flatten() {
            prop_assert!(!is_chief(&spec, "ps", task).unwrap());
            let id = id_in_cluster(&spec, "ps", task);
            // `matches!` outside `prop_assert!`, whose message would read its braces.
            let no_id = matches!(id, Err(multi_worker::Error::NoIdForTaskType { .. }));
            prop_assert!(no_id);
        }
        if spec.has_job("evaluator") {
            prop_assert!(is_chief(&spec, "evaluator", 0).unwrap());
            prop_assert_eq!(worker_count(&spec, "evaluator").unwrap(), 1);
            prop_assert_eq!(collective_leader(&spec, "evaluator", 0).unwrap(), "");
        }
    }
}

/// The chief/evaluator rules compared with TensorFlow's answer: values equal, TensorFlow's
/// `ValueError` text starting ours (we add the count or job in parentheses), and its
/// accidental exceptions (`TypeError` on a missing id, `KeyError` on a missing evaluator,
/// `AssertionError` with no leader) matched with our named errors.
pub(crate) fn compare_multi_worker(
    tally: &mut Tally,
    what: &str,
    tf: &Value,
    ours: &Result<Value, multi_worker::Error>,
) {
    match (answer(tf), ours) {
        (Answer::Ok(tf), Ok(ours)) => {
            assert_eq!(tf, ours, "{what}");
            tally.same += 1;
        }
        // id_in_cluster of an evaluator outside the cluster, without an id: TF returns None.
        (Answer::Ok(Value::Null), Err(multi_worker::Error::MissingTaskId { .. })) => {
            tally.documented += 1
        }
        (
            Answer::Err {
                class: "ValueError",
                msg,
            },
            Err(e),
        ) => {
            let ours = e.to_string();
            assert!(
                ours.starts_with(msg),
                "{what}: TensorFlow: {msg}\nours: {ours}"
            );
            tally.same += 1;
        }
        (
            Answer::Err {
                class: "TypeError", ..
            },
            Err(multi_worker::Error::MissingTaskId { .. }),
        )
        | (
            Answer::Err {
                class: "AssertionError",
                ..
            },
            Err(multi_worker::Error::NoLeader { .. }),
        ) => tally.both_failed += 1,
        (
            Answer::Err {
                class: "KeyError",
                msg: "evaluator",
            },
            Err(multi_worker::Error::Spec(e)),
        ) if e.to_string() == "No such job in cluster: 'evaluator'" => tally.both_failed += 1,
        (tf, ours) => panic!("{what}: TensorFlow {tf:?}, ours {ours:?}"),
    }
}

/// Clusters covering every rule: chief counts 0–2, workers absent / empty / 1 / 3 / sparse, ps,
/// evaluator counts 0–2, a disallowed job.
fn grid_specs() -> Vec<String> {
    let chief = [
        None,
        Some(r#""chief": ["c:1"]"#),
        Some(r#""chief": ["c:1", "d:1"]"#),
    ];
    let worker = [
        None,
        Some(r#""worker": []"#),
        Some(r#""worker": ["w0:1"]"#),
        Some(r#""worker": ["w0:1", "w1:1", "w2:1"]"#),
        Some(r#""worker": {"1": "w1:1", "5": "w5:1"}"#),
    ];
    let ps = [None, Some(r#""ps": ["p0:1", "p1:1"]"#)];
    let evaluator = [
        None,
        Some(r#""evaluator": ["e:1"]"#),
        Some(r#""evaluator": ["e:1", "f:1"]"#),
    ];
    let mut specs = Vec::new();
    for c in chief {
        for w in worker {
            for p in ps {
                for e in evaluator {
                    let jobs: Vec<&str> = [c, w, p, e].into_iter().flatten().collect();
                    specs.push(format!("{{{}}}", jobs.join(", ")));
                }
            }
        }
    }
    specs.push(r#"{"master": ["m:1"], "worker": ["w0:1"]}"#.to_owned());
    specs.push(r#"{"worker": ["w0:1"], "trainer": ["t:1"]}"#.to_owned());
    specs
}

const TASK_TYPES: [Option<&str>; 7] = [
    None,
    Some("chief"),
    Some("worker"),
    Some("ps"),
    Some("evaluator"),
    Some("master"),
    Some(""),
];
const TASK_IDS: [Option<u32>; 5] = [None, Some(0), Some(1), Some(2), Some(5)];

const SCRIPT: &str = r#"
from tensorflow.python.distribute import multi_worker_util as mwu

out = []
for c in cases:
    spec = tf.train.ClusterSpec(json.loads(c["spec"]))
    t, i = c["task_type"], c["task_id"]
    out.append({
        "is_chief": attempt(lambda: mwu.is_chief(spec, t, i)),
        "worker_count": attempt(lambda: mwu.worker_count(spec, t)),
        "id_in_cluster": attempt(lambda: mwu.id_in_cluster(spec, t, i)),
        "collective_leader": attempt(lambda: mwu.collective_leader(spec, t, i)),
        "coordination_leader": attempt(lambda: mwu.coordination_leader(spec)),
    })
print(json.dumps(out))
"#;

#[test]
fn chief_and_evaluator_rules_match_tensorflow() {
    let mut cases = Vec::new();
    for spec in grid_specs() {
        for t in TASK_TYPES {
            for i in TASK_IDS {
                cases.push((spec.clone(), t, i));
            }
        }
    }
    let input: Vec<Value> = cases
        .iter()
        // The spec as text: a serde_json `Value` would sort its jobs.
        .map(|(spec, t, i)| json!({"spec": spec, "task_type": t, "task_id": i}))
        .collect();
    let results = tf_cases::run(SCRIPT, &Value::from(input));

    let mut tally = Tally::default();
    tally.compare_each(&cases, &results, 0, |tally, (spec_json, t, i), tf| {
        let spec = ClusterSpec::from_json(spec_json).unwrap();
        let (t, i) = (*t, *i);
        for (name, ours) in [
            ("is_chief", is_chief(&spec, t, i).map(Value::from)),
            ("worker_count", worker_count(&spec, t).map(Value::from)),
            ("id_in_cluster", id_in_cluster(&spec, t, i).map(Value::from)),
            (
                "collective_leader",
                collective_leader(&spec, t, i).map(Value::from),
            ),
            (
                "coordination_leader",
                coordination_leader(&spec).map(Value::from),
            ),
        ] {
            let what = format!("{name}({spec_json}, {t:?}, {i:?})");
            compare_multi_worker(tally, &what, &tf[name], &ours);
        }
    });
    tally.report(&format!(
        "multi_worker_util: {} (cluster, task type, task id) cases",
        cases.len()
    ));
    assert!(tally.same > 2 * tally.both_failed, "{tally:?}");
}
