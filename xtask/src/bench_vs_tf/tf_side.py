# TensorFlow 2.21's side of `cargo xtask bench-vs-tf`. Each subcommand prints one line of JSON
# (times in milliseconds, medians of repeated runs in this process; memory in MB):
#   spec              10,000-task ClusterSpec (4 jobs x 2,500) from JSON, ClusterDef bytes, one
#                     task_address lookup per job
#   hostlist          expand_hostlist of 100,000 hosts
#   servers N         start N tf.distribute.Servers (job "worker"), print the cluster, serve
#                     until stdin closes
#   connect CLUSTER   experimental_connect_to_cluster to CLUSTER (JSON), each run under a new
#                     local job name so that every run is a full connect (discovery and new
#                     contexts), not an update
#   server-process    one tf.distribute.Server as its own process: start to serving, and RSS
import json, os, socket, statistics, subprocess, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def median_ms(f, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def spec():
    import tensorflow as tf
    jobs = ["chief", "evaluator", "ps", "worker"]
    doc = json.dumps({job: ["host%d-%d.example.com:%d" % (j, t, 2000 + t % 1000) for t in range(2500)]
                      for j, job in enumerate(jobs)})

    def work():
        s = tf.train.ClusterSpec(json.loads(doc))
        s.as_cluster_def().SerializeToString()
        for job in jobs:
            s.task_address(job, 1250)
    return {"median_ms": median_ms(work, 30)}


def hostlist():
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import expand_hostlist
    s = ",".join("rack%02d-node[0001-1000]" % r for r in range(100))
    assert len(expand_hostlist(s)) == 100_000
    return {"median_ms": median_ms(lambda: expand_hostlist(s), 20)}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def servers(n):
    import tensorflow as tf
    addresses = ["localhost:%d" % free_port() for _ in range(n)]
    cluster = tf.train.ClusterSpec({"worker": addresses})
    kept = [tf.distribute.Server(cluster, job_name="worker", task_index=i, start=True) for i in range(n)]
    print(json.dumps({"worker": addresses}), flush=True)
    sys.stdin.readline()
    del kept


def connect(cluster):
    import tensorflow as tf
    spec = tf.train.ClusterSpec(json.loads(cluster))
    counter = iter(range(1_000_000))
    # The first connect pays one-time setup and is not counted. TensorFlow defers it until
    # the eager context is first used, so list the devices to make it happen; every later
    # connect then runs at once (GetStatus and CreateContext to every task).
    tf.config.experimental_connect_to_cluster(spec, job_name="warmup")
    assert len(tf.config.list_logical_devices()) > 1
    return {"median_ms": median_ms(
        lambda: tf.config.experimental_connect_to_cluster(spec, job_name="client%d" % next(counter)), 15)}


SERVER = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
port = int(sys.argv[1])
server = tf.distribute.Server(tf.train.ClusterSpec({"worker": ["localhost:%d" % port]}),
                              job_name="worker", task_index=0, start=True)
print("SERVING", flush=True)
sys.stdin.readline()
"""


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def server_process():
    starts, rss = [], []
    for _ in range(3):
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", SERVER, str(free_port())],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "SERVING"
        starts.append((time.perf_counter() - t) * 1000)
        time.sleep(0.5)
        rss.append(rss_mb(p.pid))
        p.stdin.close()
        p.wait()
    return {"start_ms": statistics.median(starts), "rss_mb": statistics.median(rss)}


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "servers":
        servers(int(sys.argv[2]))
    else:
        result = {"spec": spec, "hostlist": hostlist, "server-process": server_process,
                  "connect": lambda: connect(sys.argv[2])}[command]()
        print(json.dumps(result), flush=True)
