//! Differential tests against TensorFlow 2.21 (see the `tf` module for how python is found).
//!
//! - the proto TensorFlow's Python `ClusterDeviceFilters` builds, against `to_proto`;
//! - TensorFlow's C++ `ParseFullName`, reached two ways from Python: as the device filter check
//!   of `SetRemoteDeviceFilters` (`Invalid filter: …`) and as the device of an eager op
//!   (`TFE_OpSetDevice`: `Malformed device specification …`, or, with soft placement off,
//!   `Could not satisfy device specification '<ParsedNameToString>'`, which shows how TensorFlow
//!   parsed the name);
//! - TensorFlow's C++ check of job names (`Remote worker task name is invalid …`);
//! - the filters `ParameterServerStrategy` sets, captured from its call to `connect_to_cluster`.

use cluster_spec::ClusterSpec;
use device_filter::{ClusterDeviceFilters, DeviceName, Error, ParseErrorKind};
use prost::Message;
use serde_json::{Value, json};

use crate::grammar::{ACCEPTED, rejected};
use crate::tf;

/// One `set_device_filters` call: job, task, filters.
type Call = (&'static str, u32, Vec<&'static str>);

fn proto_cases() -> Vec<Vec<Call>> {
    vec![
        vec![],
        vec![("worker", 0, vec!["/job:ps"])],
        // ParameterServerStrategy's shape, set in no particular order.
        vec![
            ("worker", 2, vec!["/job:ps", "/job:chief"]),
            ("ps", 1, vec!["/job:worker", "/job:chief"]),
            ("worker", 0, vec!["/job:ps", "/job:chief"]),
            ("ps", 0, vec!["/job:worker", "/job:chief"]),
            ("worker", 1, vec!["/job:ps", "/job:chief"]),
        ],
        // A later call replaces; an empty list removes the task but keeps the job.
        vec![
            ("worker", 1, vec!["/job:a"]),
            ("worker", 1, vec!["/job:b", "/job:c"]),
            ("evaluator", 0, vec!["/job:x"]),
            ("evaluator", 0, vec![]),
            ("chief", 3, vec![]),
        ],
        // Filters keep their text, legacy and odd forms included.
        vec![(
            "worker",
            0,
            vec![
                "/cpu:0",
                "/GPU:*",
                "",
                "/",
                "/device:cpu:3",
                "/task:01/job:ps",
                "/device:*:3",
            ],
        )],
        // Tasks sort numerically, jobs by code point.
        vec![
            ("w", 10, vec!["/job:a"]),
            ("w", 2, vec!["/job:b"]),
            ("w", 2147483647, vec!["/job:c"]),
            ("a", 5, vec!["/job:d"]),
            ("B", 1, vec!["/job:e"]),
            ("b_1", 0, vec!["/job:f"]),
        ],
        // No task 0 anywhere: the encodings must be byte-identical.
        vec![
            ("worker", 1, vec!["/job:ps", "/job:chief"]),
            ("ps", 7, vec!["/job:worker/replica:0/task:1/device:GPU:0"]),
        ],
    ]
}

const PROTO_SCRIPT: &str = r#"
out = []
for calls in cases:
    f = tf.config.experimental.ClusterDeviceFilters()
    for job, task, filters in calls:
        f.set_device_filters(job, task, filters)
    out.append(f._as_cluster_device_filters().SerializeToString().hex())
print(json.dumps(out))
"#;

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex from python"))
        .collect()
}

#[test]
fn proto_matches_tensorflows_cluster_device_filters() {
    let cases = proto_cases();
    let result = tf::run(&format!("{}{PROTO_SCRIPT}", tf::PRELUDE), &json!(cases));
    let mut identical = 0;
    for (calls, hex) in cases
        .iter()
        .zip(tf::answers::<String>(&result, cases.len()))
    {
        let mut ours = ClusterDeviceFilters::new();
        for (job, task, filters) in calls {
            ours.set_device_filters(job, *task, filters).unwrap();
        }
        let tf_bytes = hex_bytes(&hex);
        let tf_proto = cluster_proto::ClusterDeviceFilters::decode(&tf_bytes[..])
            .unwrap_or_else(|e| panic!("TensorFlow's bytes decode ({e}): {hex}"));
        assert_eq!(ours.to_proto(), tf_proto, "case {calls:?}");
        assert_eq!(
            ClusterDeviceFilters::try_from(tf_proto).unwrap(),
            ours,
            "TensorFlow's proto reads back as ours: {calls:?}"
        );
        let our_bytes = ours.to_proto().encode_to_vec();
        if our_bytes == tf_bytes {
            identical += 1;
        } else {
            // The only difference allowed: TensorFlow writes a map entry's key 0, prost omits
            // it (proto3 default). Both decode to the same message (checked above).
            assert!(
                calls.iter().any(|(_, task, f)| *task == 0 && !f.is_empty()),
                "bytes differ without a task 0 in {calls:?}"
            );
            assert!(
                tf_bytes.len() > our_bytes.len(),
                "TensorFlow's encoding is the longer one"
            );
        }
    }
    // Cases without a task 0 (including the empty one) encode byte for byte as TensorFlow.
    assert!(identical >= 3, "only {identical} byte-identical encodings");
}

/// A small deterministic random source (xorshift).
fn rng(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}

/// Names glued from `pieces` at random: `count` names of up to `max_len` pieces.
fn glued(pieces: &[&str], count: usize, max_len: usize, seed: u64) -> Vec<String> {
    let mut next = rng(seed);
    (0..count)
        .map(|_| {
            let len = next(max_len + 1);
            (0..len).map(|_| pieces[next(pieces.len())]).collect()
        })
        .collect()
}

/// A deterministic batch of names near the grammar's edges: fragments glued at random (mostly
/// invalid), and whole components glued at random (valid but for out-of-range numbers).
fn generated_names() -> Vec<String> {
    const FRAGMENTS: &[&str] = &[
        "/job:",
        "/replica:",
        "/task:",
        "/device:",
        "/cpu:",
        "/CPU:",
        "/gpu:",
        "/GPU:",
        "/Cpu:",
        "/JOB:",
        "/tpu:",
        "*",
        "worker",
        "ps",
        "a_1",
        "1x",
        "GPU",
        "cpu",
        "TPU_SYSTEM",
        "0",
        "01",
        "7",
        "2147483647",
        "2147483648",
        "4294967296",
        "99999999999999999999",
        ":",
        "/",
        "-",
        " ",
        "x",
        "ö",
        "_",
    ];
    const COMPONENTS: &[&str] = &[
        "/job:worker",
        "/job:*",
        "/job:ps",
        "/job:localhost",
        "/job:a_1",
        "/replica:0",
        "/replica:*",
        "/replica:01",
        "/task:0",
        "/task:3",
        "/task:*",
        "/task:2147483647",
        "/device:CPU:0",
        "/device:GPU",
        "/device:cpu:1",
        "/device:*:2",
        "/device:*",
        "/device:TPU_SYSTEM:*",
        "/cpu:0",
        "/CPU:*",
        "/gpu:1",
        "/GPU:0",
        "/task:4294967296",
    ];
    let mut names = glued(FRAGMENTS, 500, 6, 0x2545_f491_4f6c_dd1d);
    names.extend(glued(COMPONENTS, 250, 5, 0x9e37_79b9_7f4a_7c15));
    names
}

/// The table names, extra edge cases and the generated batch, without duplicates.
fn oracle_names() -> Vec<String> {
    let mut names: Vec<String> = ACCEPTED.iter().map(|(n, _)| (*n).to_owned()).collect();
    names.extend(rejected().into_iter().map(|(n, _, _)| n.to_owned()));
    names.extend(
        [
            "/job:localhost/replica:0/task:0/device:CPU:0",
            "/job:localhost",
            "/device:CPU:0",
            "/task:0/cpu:*",
            "/device:*:0",
            "/task:4294967297",
            "/replica:2147483648",
            "/device:GPU:18446744073709551615",
            "/device:GPU:18446744073709551616",
        ]
        .map(String::from),
    );
    names.extend(generated_names());
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

const PARSE_SCRIPT: &str = r#"
from tensorflow.core.protobuf import tensorflow_server_pb2
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import context

tf.config.set_soft_device_placement(False)
ctx = context.context()
ctx.ensure_initialized()
x = tf.constant(1.0)
attrs = ("T", x.dtype.as_datatype_enum)
SPEC = "Could not satisfy device specification '"

def eager(name):
    # TFE_OpSetDevice parses the name with ParseFullName; a name that matches no device shows
    # how it was parsed (ParsedNameToString).
    try:
        pywrap_tfe.TFE_Py_Execute(ctx._handle, name, "Identity", [x], attrs, 1)
        return "placed"
    except Exception as e:
        msg = str(e)
        if msg.startswith("Malformed device specification"):
            return "malformed"
        if msg.startswith(SPEC):
            return "spec:" + msg[len(SPEC):].split("'. enable_soft_placement", 1)[0]
        return "other:" + msg

def as_filter(name):
    # SetRemoteDeviceFilters parses each filter with ParseFullName before anything is
    # connected. A second job with an invalid name stops it right after our filter passed.
    sd = tensorflow_server_pb2.ServerDef(job_name="localhost", task_index=0, protocol="grpc")
    j = sd.cluster.job.add(); j.name = "localhost"; j.tasks[0] = "localhost:1"
    a = sd.cluster_device_filters.jobs.add(); a.name = "a"
    a.tasks[0].device_filters.append(name)
    b = sd.cluster_device_filters.jobs.add(); b.name = "1bad"
    b.tasks[0].device_filters.append("/job:x")
    try:
        ctx.set_server_def(sd)
        return "other:set_server_def succeeded"
    except Exception as e:
        msg = str(e)
        if msg.startswith("Invalid filter: "):
            return "rejected"
        if msg.startswith("Remote worker task name is invalid /job:1bad/task:0"):
            return "accepted"
        return "other:" + msg

eager_results = [eager(n) for n in cases]
filter_results = [as_filter(n) for n in cases]
print(json.dumps({"eager": eager_results, "filter": filter_results}))
"#;

/// What TensorFlow's `ParsedNameToString` writes: our canonical form, except that an id
/// without a type is dropped.
fn tf_string(name: &DeviceName) -> String {
    if name.device_type().is_none() && name.id().is_some() {
        let mut without_id = DeviceName::new();
        if let Some(job) = name.job() {
            without_id = without_id.with_job(job).unwrap();
        }
        if let Some(replica) = name.replica() {
            without_id = without_id.with_replica(replica).unwrap();
        }
        if let Some(task) = name.task() {
            without_id = without_id.with_task(task).unwrap();
        }
        without_id.to_string()
    } else {
        name.to_string()
    }
}

/// A number TensorFlow accepts (it fits a `uint64`) and we reject (above 2^31 - 1).
fn is_documented_number_difference(result: &Result<DeviceName, Error>) -> bool {
    matches!(
        result,
        Err(Error::InvalidDeviceName {
            reason: ParseErrorKind::NumberOutOfRange { digits },
            ..
        }) if digits.trim_start_matches('0').len() <= 19 || digits.parse::<u64>().is_ok()
    )
}

#[test]
fn parse_full_name_matches_tensorflows_runtime() {
    let names = oracle_names();
    let result = tf::run(&format!("{}{PARSE_SCRIPT}", tf::PRELUDE), &json!(names));
    let eager: Vec<String> = tf::answers(&result["eager"], names.len());
    let filter: Vec<String> = tf::answers(&result["filter"], names.len());
    let local_cpu: DeviceName = "/job:localhost/replica:0/task:0/device:CPU:0"
        .parse()
        .unwrap();

    let (mut accepted, mut rejected, mut with_canonical, mut differences) = (0, 0, 0, Vec::new());
    for ((name, eager), filter) in names.iter().zip(&eager).zip(&filter) {
        let ours = name.parse::<DeviceName>();
        assert!(
            filter == "accepted" || filter == "rejected",
            "{name:?}: unexpected TensorFlow answer {filter}"
        );
        // TensorFlow agrees with itself on both paths.
        assert_eq!(
            eager == "malformed",
            filter == "rejected",
            "{name:?}: eager {eager}, filter {filter}"
        );
        if filter == "accepted" && is_documented_number_difference(&ours) {
            // Documented: TensorFlow wraps numbers above 2^31 - 1 into an int.
            if name == "/task:4294967297" {
                assert_eq!(eager, "spec:/task:1", "TensorFlow reads task 2^32 + 1 as 1");
            }
            differences.push(name.clone());
            continue;
        }
        match (&ours, filter.as_str()) {
            (Ok(parsed), "accepted") => {
                accepted += 1;
                // TensorFlow keeps the op's device as ParsedNameToString, which drops an id
                // without a type, and caches kernels by that string: whether such a name is
                // placed depends on what ran before. Only its printed form is compared.
                let id_without_type = parsed.device_type().is_none() && parsed.id().is_some();
                if let Some(canonical) = eager.strip_prefix("spec:") {
                    with_canonical += 1;
                    assert_eq!(tf_string(parsed), canonical, "how {name:?} parses");
                    assert!(
                        id_without_type || !parsed.is_compatible_with(&local_cpu),
                        "{name:?}"
                    );
                } else {
                    assert_eq!(eager, "placed", "{name:?}");
                    assert!(
                        id_without_type || parsed.is_compatible_with(&local_cpu),
                        "{name:?}"
                    );
                }
            }
            (Err(_), "rejected") => rejected += 1,
            (ours, tf) => panic!("{name:?}: TensorFlow {tf}, we {ours:?}"),
        }
    }
    println!(
        "ParseFullName oracle: {} names, {accepted} accepted by both ({with_canonical} with \
         TensorFlow's canonical form compared), {rejected} rejected by both, {} documented \
         differences (numbers above 2^31 - 1 that TensorFlow wraps), e.g. {:?}",
        names.len(),
        differences.len(),
        &differences[..differences.len().min(4)]
    );
    assert!(accepted >= 150 && rejected >= 300 && with_canonical >= 100);
    assert!(
        differences.iter().any(|d| d == "/task:4294967297"),
        "TensorFlow still accepts numbers above 2^31 - 1: {differences:?}"
    );
}

const JOB_SCRIPT: &str = r#"
from tensorflow.core.protobuf import tensorflow_server_pb2
from tensorflow.python.eager import context
ctx = context.context()
ctx.ensure_initialized()

def job(name):
    # SetRemoteDeviceFilters parses "/job:<name>/task:0" first; a valid name reaches the next
    # job, whose filter is invalid.
    sd = tensorflow_server_pb2.ServerDef(job_name="localhost", task_index=0, protocol="grpc")
    j = sd.cluster.job.add(); j.name = "localhost"; j.tasks[0] = "localhost:1"
    a = sd.cluster_device_filters.jobs.add(); a.name = name
    a.tasks[0].device_filters.append("/job:x")
    b = sd.cluster_device_filters.jobs.add(); b.name = "z"
    b.tasks[0].device_filters.append("/job:")
    try:
        ctx.set_server_def(sd)
        return "other:set_server_def succeeded"
    except Exception as e:
        msg = str(e)
        if msg.startswith("Invalid filter: /job:"):
            return "accepted"
        if msg.startswith("Remote worker task name is invalid") or msg.startswith(
                "Job name and task index must be specified"):
            return "rejected"
        return "other:" + msg

print(json.dumps([job(n) for n in cases]))
"#;

#[test]
fn job_names_match_tensorflows_runtime() {
    let names = [
        "worker",
        "ps",
        "chief",
        "a_1",
        "A",
        "localhost",
        "",
        "1x",
        "_a",
        "a-b",
        "a b",
        "a:b",
        "wörker",
        "*",
        "a/replica:3",
        "a/device:GPU:0",
        "a/",
    ];
    let result = tf::run(&format!("{}{JOB_SCRIPT}", tf::PRELUDE), &json!(names));
    let answers: Vec<String> = tf::answers(&result, names.len());
    for (name, tf) in names.iter().zip(&answers) {
        let ours = ClusterDeviceFilters::new().set_device_filters(name, 0, ["/job:x"]);
        match (tf.as_str(), &ours) {
            ("accepted", Ok(())) | ("rejected", Err(Error::InvalidJobName { .. })) => {}
            // Documented: TensorFlow reads "/job:a/replica:3/task:0" as a job and a replica.
            ("accepted", Err(Error::InvalidJobName { .. })) if name.contains('/') => {}
            (tf, ours) => panic!("job name {name:?}: TensorFlow {tf}, we {ours:?}"),
        }
    }
}

const PS_SCRIPT: &str = r#"
from tensorflow.python.distribute import parameter_server_strategy_v2 as pss

class Captured(Exception):
    pass

captured = {}

def connect_to_cluster(cluster_spec, job_name="localhost", task_index=0, protocol=None,
                       make_master_device_default=True, cluster_device_filters=None):
    captured["job"] = job_name
    captured["filters"] = cluster_device_filters
    raise Captured()

pss.remote.connect_to_cluster = connect_to_cluster
out = []
for spec in cases:
    spec = {job: ({int(k): v for k, v in tasks.items()} if isinstance(tasks, dict) else tasks)
            for job, tasks in spec.items()}
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), rpc_layer="grpc")
    try:
        tf.distribute.experimental.ParameterServerStrategy(resolver)
        out.append({"error": "connect_to_cluster was not called"})
    except Captured:
        out.append({"job": captured["job"],
                    "proto": captured["filters"]._as_cluster_device_filters()
                             .SerializeToString().hex()})
print(json.dumps(out))
"#;

#[test]
fn parameter_server_preset_matches_tensorflow() {
    let specs = [
        r#"{"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1"]}"#,
        r#"{"worker": ["w:1"], "ps": ["p:1", "p:2", "p:3"]}"#,
        r#"{"chief": ["c:1"], "worker": ["w:1", "w:2", "w:3"], "ps": ["p:1", "p:2"], "evaluator": ["e:1"]}"#,
        // Sparse: TensorFlow sets ps task 0 (0..len), we set the task the spec defines.
        r#"{"chief": ["c:1"], "worker": ["w:1"], "ps": {"3": "p:3"}}"#,
    ];
    let values: Vec<Value> = specs
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    let result = tf::run(&format!("{}{PS_SCRIPT}", tf::PRELUDE), &json!(values));
    let answers: Vec<Value> = tf::answers(&result, specs.len());
    for (spec_json, answer) in specs.iter().zip(&answers) {
        assert_eq!(
            answer["job"], "chief",
            "coordinator job for {spec_json}: {answer}"
        );
        let tf_bytes = hex_bytes(answer["proto"].as_str().expect("a proto"));
        let tf_proto = cluster_proto::ClusterDeviceFilters::decode(&tf_bytes[..]).unwrap();
        let spec = ClusterSpec::from_json(spec_json).unwrap();
        let ours = ClusterDeviceFilters::parameter_server(&spec).to_proto();
        if spec.is_dense("ps").unwrap() {
            assert_eq!(ours, tf_proto, "filters for {spec_json}");
        } else {
            // Documented difference: the same filters, on the spec's task index.
            let mut moved = tf_proto.clone();
            let ps = moved.jobs.iter_mut().find(|j| j.name == "ps").unwrap();
            let filters = ps.tasks.remove(&0).expect("TensorFlow sets ps task 0");
            ps.tasks.insert(3, filters);
            assert_eq!(ours, moved, "filters for {spec_json}");
        }
    }
}
