//! `tfcluster connect --follow` end to end: a cluster file rewritten, Kubernetes pods added,
//! deleted and readdressed (the API server stood in for on loopback), and an elastic job's
//! rounds watched at its rendezvous (in process, nodes joining with the ports of in-process
//! task servers), each change one line, and SIGINT closing every remote context with exit
//! status 130. And a `Context` following the rounds through `RendezvousWatcher` itself.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cluster_resolver::WatchClusterResolver;
use cluster_resolver::watch::WatchOptions;
use cluster_spec::ClusterSpec;
use elastic::{
    ClientOptions, JobConfig, Join, Node, RendezvousClient, RendezvousServer, RendezvousWatcher,
    Waited,
};
use nix::sys::signal::Signal;
use remote_connect::{
    ClusterChange, Context, FollowEvent, FollowOptions, RunningServer, TaskId, TaskServer,
};
use serde_json::Value;
use tokio::runtime::Runtime;

use super::launch::Launch;

const PROMPT: Duration = Duration::from_secs(30);

/// A task server of job `worker` at `addr` (port 0: any free port), in `rt`.
fn server(rt: &Runtime, addr: SocketAddr) -> RunningServer {
    let placeholder = ClusterSpec::from_json(r#"{"worker": ["localhost:0"]}"#).unwrap();
    rt.block_on(
        TaskServer::builder(placeholder, "worker", 0)
            .with_bind(addr)
            .start(),
    )
    .unwrap()
}

/// `n` task servers on free 127.0.0.1 ports, in `rt`.
fn loopback_servers(rt: &Runtime, n: usize) -> Vec<RunningServer> {
    (0..n)
        .map(|_| server(rt, "127.0.0.1:0".parse().unwrap()))
        .collect()
}

/// Waits until no server holds a context (`connect --follow` closed them all).
fn assert_all_closed(servers: &[RunningServer]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while servers.iter().any(|s| !s.contexts().is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "contexts left open: {:?}",
            servers
                .iter()
                .map(|s| s.contexts().len())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last JSON line of `job`'s stdout that has `key`, once there are `count` of them.
fn json_line(job: &Launch, key: &str, count: usize) -> Value {
    let lines = job.lines_with(&format!("\"{key}\""), count, PROMPT);
    serde_json::from_str(&lines[count - 1]).unwrap()
}

fn tasks(change: &Value, key: &str) -> Vec<String> {
    serde_json::from_value(change[key].clone()).unwrap()
}

fn task(t: u32) -> String {
    format!("/job:worker/replica:0/task:{t}")
}

#[test]
fn a_followed_cluster_file_prints_each_change_and_sigint_closes_every_context() {
    let rt = Runtime::new().unwrap();
    let servers = loopback_servers(&rt, 3);
    let a: Vec<String> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    let dir = super::scratch("follow");
    let file = dir.path().join("cluster.json");
    let replace = |json: String| {
        let next = dir.path().join("cluster.json.next");
        std::fs::write(&next, json).unwrap();
        std::fs::rename(&next, &file).unwrap();
    };
    replace(format!(r#"{{"worker": ["{}", "{}"]}}"#, a[0], a[1]));

    let mut job = Launch::start(
        &[
            "connect",
            "--cluster",
            file.to_str().unwrap(),
            "--follow",
            "--format",
            "json",
        ],
        &[],
    );
    let report = json_line(&job, "context_id", 1);
    assert_eq!(report["tasks"].as_array().unwrap().len(), 2, "{report}");

    replace(format!(
        r#"{{"worker": ["{}", "{}", "{}"]}}"#,
        a[0], a[1], a[2]
    ));
    let added = json_line(&job, "added", 1);
    assert_eq!(tasks(&added, "added"), [task(2)], "{added}");
    assert!(tasks(&added, "removed").is_empty() && tasks(&added, "replaced").is_empty());
    assert_eq!(
        (added["reset"].as_bool(), added["devices"].as_u64()),
        (Some(false), Some(4))
    );

    replace(format!(
        r#"{{"worker": {{"0": "{}", "2": "{}"}}}}"#,
        a[0], a[2]
    ));
    let removed = json_line(&job, "added", 2);
    assert_eq!(tasks(&removed, "removed"), [task(1)], "{removed}");
    assert_eq!(removed["devices"].as_u64(), Some(3));

    job.signal(Signal::SIGINT);
    assert_eq!(job.wait(PROMPT).code(), Some(130), "{}", job.stderr());
    assert!(
        job.stderr().contains("stopped by SIGINT"),
        "{}",
        job.stderr()
    );
    assert_all_closed(&servers);
}

#[cfg(feature = "kubernetes")]
#[test]
fn followed_kubernetes_pods_added_deleted_and_readdressed() {
    use std::sync::{Arc, Mutex};

    use http_standin::kubernetes::{event, kubeconfig, pod, pod_list};
    use http_standin::{HttpServer, Request, Response};
    use tokio::sync::broadcast;

    let rt = Runtime::new().unwrap();
    // Pods on 127.0.0.2..5, all on one port as a Kubernetes job's pods are.
    let first = server(&rt, "127.0.0.2:0".parse().unwrap());
    let port = first.local_addr().port();
    let mut servers = vec![first];
    for host in 3..=5 {
        servers.push(server(&rt, SocketAddr::from(([127, 0, 0, host], port))));
    }
    let ip = |host: u8| format!("127.0.0.{host}");
    let labels = [("app", "w")];
    let running = |name: &str, host: u8, version: u32| {
        pod(
            name,
            "training",
            &labels,
            "Running",
            Some(&ip(host)),
            version,
        )
    };

    // The API server: a listing of the pods as they are, and a watch carrying the events.
    let pods = Arc::new(Mutex::new(vec![
        running("w-0", 2, 90),
        running("w-1", 3, 91),
    ]));
    let (events, _) = broadcast::channel::<String>(64);
    let listed = pods.clone();
    let lines = events.clone();
    let api = rt.block_on(HttpServer::start(move |request: &Request| {
        if request.query("watch") == Some("true") {
            return Response::lines(&lines);
        }
        Response::json(pod_list(listed.lock().unwrap().clone(), 100))
    }));
    let dir = super::scratch("follow-k8s");
    let config = dir.path().join("kubeconfig.yaml");
    std::fs::write(&config, kubeconfig(api.url(), "training")).unwrap();
    let send = |kind: &str, object: Value| {
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let mut pods = pods.lock().unwrap();
        pods.retain(|p| p["metadata"]["name"] != name.as_str());
        if kind != "DELETED" {
            pods.push(object.clone());
            pods.sort_by_key(|p| p["metadata"]["name"].as_str().unwrap().to_owned());
        }
        events.send(event(kind, object)).unwrap();
    };

    let mut job = Launch::start(
        &[
            "connect",
            "--from",
            "kubernetes",
            "--k8s-job",
            "worker=app=w",
            "--k8s-port",
            &port.to_string(),
            "--follow",
        ],
        &[
            ("KUBECONFIG", config.to_str().unwrap()),
            ("HOME", "/nonexistent"),
        ],
    );
    job.lines_with("no device filters", 1, PROMPT);
    let watching = |n: usize| {
        let deadline = std::time::Instant::now() + PROMPT;
        while api
            .requests()
            .iter()
            .filter(|r| r.query("watch") == Some("true"))
            .count()
            < n
        {
            assert!(std::time::Instant::now() < deadline, "no watch came");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    watching(1);

    send("ADDED", running("w-2", 4, 101));
    let line = &job.lines_with("update: ", 1, PROMPT)[0];
    assert_eq!(line, &format!("update: added {}; 4 devices", task(2)));

    send("DELETED", running("w-2", 4, 102));
    let line = &job.lines_with("update: ", 2, PROMPT)[1];
    assert_eq!(line, &format!("update: removed {}; 3 devices", task(2)));

    // Pod w-0 rescheduled with another IP: task 0 replaced, no reset.
    send("MODIFIED", running("w-0", 5, 103));
    let line = &job.lines_with("update: ", 3, PROMPT)[2];
    assert_eq!(line, &format!("update: replaced {}; 3 devices", task(0)));
    assert!(
        servers[3].contexts().len() == 1,
        "the new pod has the context"
    );

    job.signal(Signal::SIGINT);
    assert_eq!(job.wait(PROMPT).code(), Some(130), "{}", job.stderr());
    assert_all_closed(&servers);
    rt.block_on(api.stop());
}

/// An elastic job on an in-process rendezvous, nodes joined by hand with the ports of task
/// servers on 127.0.0.1: one task per node, 1 to 2 nodes, a 300 ms last call, and a
/// heartbeat timeout long enough that nodes the test drives by hand are never lost.
struct ElasticJob {
    rdzv: RendezvousServer,
    client: RendezvousClient,
    config: JobConfig,
}

impl ElasticJob {
    async fn start() -> Self {
        let options = RendezvousServer::builder()
            .with_last_call(Duration::from_millis(300))
            .with_timeout(Duration::from_secs(300))
            .with_bind("127.0.0.1:0".parse().unwrap());
        let rdzv = options.start().await.unwrap();
        let client =
            RendezvousClient::new(rdzv.local_addr().to_string(), ClientOptions::default()).unwrap();
        let config = JobConfig::new("1:2".parse().unwrap(), 1).unwrap();
        Self {
            rdzv,
            client,
            config,
        }
    }

    /// A node whose one task is `server`.
    async fn join(&self, server: &RunningServer) -> Node {
        let join = Join::new("job", self.config.clone(), vec![server.local_addr().port()])
            .with_host("127.0.0.1");
        self.client.join(&join).await.unwrap()
    }

    /// Waits for the next round of every node in `nodes`.
    async fn round(&self, nodes: &mut [&mut Node]) -> ClusterSpec {
        let mut spec = None;
        for node in nodes.iter_mut() {
            let Waited::Round(round) = self.client.wait_round(node, PROMPT).await.unwrap() else {
                panic!("the job ended");
            };
            spec = Some(round.cluster_spec().clone());
        }
        spec.unwrap()
    }
}

/// The next `Changed` of `events`, within [`PROMPT`].
async fn changed(events: &mut tokio::sync::broadcast::Receiver<FollowEvent>) -> ClusterChange {
    loop {
        match tokio::time::timeout(PROMPT, events.recv()).await {
            Ok(Ok(FollowEvent::Changed(change))) => return change,
            Ok(Ok(other)) => eprintln!("follow event: {other:?}"),
            other => panic!("no change: {other:?}"),
        }
    }
}

/// The `worker` job of `spec`.
fn workers_of(spec: &ClusterSpec) -> Vec<Option<String>> {
    let tasks = spec.job_tasks("worker").unwrap();
    tasks.into_iter().map(|t| t.map(str::to_owned)).collect()
}

/// The `worker` job of the cluster `ctx` serves (beside its own local job).
fn workers(ctx: &Context) -> Vec<Option<String>> {
    workers_of(&ctx.cluster_spec().unwrap())
}

fn names(tasks: &[TaskId]) -> Vec<String> {
    tasks.iter().map(TaskId::to_string).collect()
}

#[test]
fn a_context_follows_an_elastic_jobs_rounds() {
    let rt = Runtime::new().unwrap();
    let servers = loopback_servers(&rt, 2);
    rt.block_on(async {
        let job = ElasticJob::start().await;
        let mut a = job.join(&servers[0]).await;
        let round_1 = job.round(&mut [&mut a]).await;

        let watcher = Arc::new(RendezvousWatcher::new(job.client.clone(), "job"));
        let ctx = Context::new();
        let follow = ctx.follow(
            watcher.watch(WatchOptions::default()),
            FollowOptions::default(),
        );
        let mut events = follow.subscribe();
        let first = changed(&mut events).await;
        assert_eq!(names(&first.added), [task(0)], "{first:?}");
        assert_eq!(workers(&ctx), workers_of(&round_1));

        // A second node ends round 1 (it had room); round 2 holds both, worker 0 where it was.
        let mut b = job.join(&servers[1]).await;
        job.client.rejoin(&mut a).await.unwrap();
        let round_2 = job.round(&mut [&mut a, &mut b]).await;
        let change = changed(&mut events).await;
        assert_eq!(names(&change.added), [task(1)], "{change:?}");
        assert!(change.removed.is_empty() && change.replaced.is_empty() && !change.reset);
        assert_eq!(change.devices, 3);
        assert_eq!(workers(&ctx), workers_of(&round_2));

        follow.stop().await;
        ctx.close().await.unwrap();
        job.rdzv.shutdown().await;
    });
    assert_all_closed(&servers);
}

#[test]
fn connect_follows_an_elastic_job_at_its_rendezvous_and_sigint_closes_every_context() {
    let rt = Runtime::new().unwrap();
    let servers = loopback_servers(&rt, 2);
    let job = rt.block_on(ElasticJob::start());
    let mut a = rt.block_on(job.join(&servers[0]));
    rt.block_on(job.round(&mut [&mut a]));

    let rdzv = job.rdzv.local_addr().to_string();
    let args = [
        "connect",
        "--from",
        "rendezvous",
        "--rdzv",
        &rdzv,
        "--rdzv-id",
        "job",
    ];
    // Without --follow: the running round, once.
    let mut once = Launch::start(&args, &[]);
    assert_eq!(once.wait(PROMPT).code(), Some(0), "{}", once.stderr());
    assert!(
        once.stdout().contains(&servers[0].local_addr().to_string()),
        "{}",
        once.stdout()
    );

    // resolve: the round's cluster, no task of this process, worker 0 as master.
    let worker_0 = servers[0].local_addr().to_string();
    let mut resolve = Launch::start(
        &[
            "resolve",
            "--from",
            "rendezvous",
            "--rdzv",
            &rdzv,
            "--rdzv-id",
            "job",
            "--json",
        ],
        &[],
    );
    assert_eq!(resolve.wait(PROMPT).code(), Some(0), "{}", resolve.stderr());
    let found: Value = serde_json::from_str(&resolve.stdout()).unwrap();
    assert_eq!(found["cluster"]["worker"][0], worker_0.as_str(), "{found}");
    assert_eq!(found["master"], format!("grpc://{worker_0}"), "{found}");
    assert!(found["task_type"].is_null(), "{found}");

    let mut follow = Launch::start(
        &[&args[..], &["--follow", "--format", "json"]].concat(),
        &[],
    );
    let report = json_line(&follow, "context_id", 1);
    assert_eq!(report["tasks"].as_array().unwrap().len(), 1, "{report}");

    let mut b = rt.block_on(job.join(&servers[1]));
    rt.block_on(job.client.rejoin(&mut a)).unwrap();
    rt.block_on(job.round(&mut [&mut a, &mut b]));
    let added = json_line(&follow, "added", 1);
    assert_eq!(tasks(&added, "added"), [task(1)], "{added}");
    assert_eq!(
        (added["reset"].as_bool(), added["devices"].as_u64()),
        (Some(false), Some(3))
    );

    follow.signal(Signal::SIGINT);
    assert_eq!(follow.wait(PROMPT).code(), Some(130), "{}", follow.stderr());
    assert_all_closed(&servers);
    rt.block_on(job.rdzv.shutdown());
}
