//! Real `tf.distribute.Server`s for tests that talk to TensorFlow's workers.

use crate::{Process, STARTUP};

/// Starts a `tf.distribute.Server` for every task of `{"job": task count}` on free loopback
/// ports, in one Python process, and prints the cluster.
const SCRIPT: &str = r#"
import json, socket, sys
import tensorflow as tf
jobs = json.loads(sys.argv[1])
def free(n):
    # All held at once, so no port is drawn twice; closed just before the servers bind.
    socks = [socket.socket() for _ in range(n)]
    for s in socks: s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks: s.close()
    return iter(ports)
# Another process may take a port between its close and the server's bind: new ports then.
for attempt in range(3):
    ports = free(sum(jobs.values()))
    cluster = {job: ["localhost:%d" % next(ports) for _ in range(n)] for job, n in jobs.items()}
    spec = tf.train.ClusterSpec(cluster)
    try:
        servers = [tf.distribute.Server(spec, job_name=job, task_index=i, start=True)
                   for job, n in jobs.items() for i in range(n)]
        break
    except tf.errors.UnknownError:
        if attempt == 2: raise
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
