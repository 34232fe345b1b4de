//! Real `tf.distribute.Server`s for tests that talk to TensorFlow's workers.

use crate::{Process, STARTUP};

/// Starts a `tf.distribute.Server` for every task of `{"job": task count}` on free loopback
/// ports, in one Python process, and prints the cluster.
const SCRIPT: &str = r#"
import json, socket, sys
import tensorflow as tf
jobs = json.loads(sys.argv[1])
def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
cluster = {job: ["localhost:%d" % free() for _ in range(n)] for job, n in jobs.items()}
spec = tf.train.ClusterSpec(cluster)
servers = [tf.distribute.Server(spec, job_name=job, task_index=i, start=True)
           for job, n in jobs.items() for i in range(n)]
print("READY", json.dumps(cluster), flush=True)
sys.stdin.readline()
"#;

/// Real TensorFlow servers for `jobs` (job name, task count). Returns their process, which
/// stops them when dropped (or when a line is sent to it), and the cluster as JSON
/// (`{"job": ["localhost:port", …]}`).
///
/// # Panics
///
/// If TensorFlow cannot run or the servers do not start within [`STARTUP`].
pub fn tf_servers(jobs: &[(&str, usize)]) -> (Process, String) {
    let counts: serde_json::Map<String, serde_json::Value> = jobs
        .iter()
        .map(|(job, n)| ((*job).to_owned(), (*n).into()))
        .collect();
    let mut process = Process::spawn(SCRIPT, &[&serde_json::Value::Object(counts).to_string()]);
    let cluster = process.expect("READY", STARTUP);
    (process, cluster)
}
