//! `--metrics` seen by a real Prometheus (Debian's 2.42, which `cargo xtask test` installs):
//! a `rendezvous serve` and two agents (`--nodes 1:2`), each with `--metrics 127.0.0.1:0`,
//! scraped every second; a task killed ends round 1 with cause task_failed, and Prometheus's
//! HTTP API (not the endpoints) must show the restart on both agents and two members in the
//! new round; then one agent leaves (SIGTERM), and the other must show cause left and one
//! member. A `serve` with a client connected: its connections and contexts gauges. Then
//! `/healthz`: 200 while serving, connection refused once the process exited.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Node 1's task kills itself (SIGKILL) in round 1; every task then serves until stopped.
const TASK: &str = r#"
if [ "$TFCLUSTER_NODE_RANK" = 1 ] && [ "$TFCLUSTER_ROUND" = 1 ]; then sleep 0.5; kill -KILL $$; fi
exec sleep 1000
"#;

/// The address a process printed on stderr after `serving metrics on `.
fn metrics_addr(launch: &Launch) -> SocketAddr {
    let started = Instant::now();
    loop {
        if let Some(addr) = launch
            .stderr()
            .lines()
            .find_map(|line| line.strip_prefix("serving metrics on "))
        {
            return addr.trim().parse().expect("an address");
        }
        if started.elapsed() > TIMEOUT {
            launch.fail("no `serving metrics on` line");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `GET path` over HTTP/1.0 to `addr`: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let code = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((code, body))
}

/// A real Prometheus scraping `targets` every second, killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[SocketAddr]) -> Self {
        let dir = super::scratch("prometheus");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: tfcluster\n    static_configs:\n      \
             - targets: [{}]\n",
            targets.join(", ")
        );
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let program = ["/usr/bin/prometheus", "/usr/sbin/prometheus"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
            .unwrap_or("prometheus");
        let child = Command::new(program)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {program} ({e}): the test needs Debian's prometheus package \
                     (`cargo xtask test` installs it; apt-get install prometheus)"
                )
            });
        let mut prometheus = Self {
            child,
            addr,
            _dir: dir,
        };
        let started = Instant::now();
        while !matches!(get(addr, "/-/ready"), Ok((200, _))) {
            if let Ok(Some(status)) = prometheus.child.try_wait() {
                panic!("prometheus exited ({status}): {}", prometheus.log());
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "prometheus not ready in {TIMEOUT:?}: {}",
                prometheus.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The value of `query` per scraped instance, as Prometheus's HTTP API answers it.
    fn query(&self, query: &str) -> Vec<(String, f64)> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (code, body) = get(self.addr, &format!("/api/v1/query?query={encoded}"))
            .unwrap_or_else(|e| panic!("prometheus's API: {e}"));
        assert_eq!(code, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        answer["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|r| {
                let instance = r["metric"]["instance"].as_str().unwrap_or("").to_owned();
                let value = r["value"][1].as_str().and_then(|v| v.parse().ok());
                (instance, value.unwrap_or(f64::NAN))
            })
            .collect()
    }

    /// Waits until `query` has `want` for each of `instances`.
    fn wait_for(&self, query: &str, instances: &[SocketAddr], want: f64) {
        let started = Instant::now();
        loop {
            let got = self.query(query);
            let all = instances.iter().all(|i| {
                got.iter()
                    .any(|(instance, v)| *instance == i.to_string() && *v == want)
            });
            if all {
                return;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "{query} is not {want} on {instances:?} after {TIMEOUT:?}: {got:?}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_sees_a_restart_by_cause_and_the_members() {
    let mut server = Launch::start(
        &[
            "rendezvous",
            "serve",
            "--listen",
            "127.0.0.1:0",
            // Room for the second agent to join round 1; the 1-member round after a leave
            // forms this long after.
            "--rdzv-last-call",
            "5s",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[],
    );
    let line = server
        .lines_with("serving the rendezvous on ", 1, TIMEOUT)
        .remove(0);
    let endpoint = line.rsplit(' ').next().expect("an address").to_owned();
    let server_metrics = metrics_addr(&server);
    let agent = || {
        Launch::start(
            &[
                "run",
                "--rdzv",
                &endpoint,
                "--rdzv-id",
                "watched",
                "--nodes",
                "1:2",
                "--max-restarts",
                "3",
                "--metrics",
                "127.0.0.1:0",
                "--",
                "sh",
                "-c",
                TASK,
            ],
            &[],
        )
    };
    let mut agents = vec![agent(), agent()];
    let agent_metrics: Vec<SocketAddr> = agents.iter().map(metrics_addr).collect();
    let prometheus = Prometheus::start(&[&agent_metrics[..], &[server_metrics]].concat());

    prometheus.wait_for(
        r#"tfcluster_restarts_total{cause="task_failed"}"#,
        &agent_metrics,
        1.0,
    );
    prometheus.wait_for("tfcluster_round", &agent_metrics, 2.0);
    prometheus.wait_for("tfcluster_round_members", &agent_metrics, 2.0);
    prometheus.wait_for("tfcluster_tasks_up", &agent_metrics, 1.0);
    prometheus.wait_for(
        "tfcluster_rendezvous_rounds_formed_total",
        &[server_metrics],
        2.0,
    );
    prometheus.wait_for("up", &[&agent_metrics[..], &[server_metrics]].concat(), 1.0);
    // The killed task, as its agent counted it.
    let signalled = prometheus.query(r#"tfcluster_task_exits_total{status="signalled"}"#);
    assert_eq!(
        signalled.iter().map(|(_, v)| v).sum::<f64>(),
        1.0,
        "{signalled:?}"
    );

    // Health: 200 while serving.
    for addr in [&agent_metrics[..], &[server_metrics]].concat() {
        let (code, body) = get(addr, "/healthz").expect("an answer");
        assert_eq!((code, body.as_str()), (200, "ok\n"), "{addr}");
    }

    // One host leaves: the other goes on alone, its round ended with cause left.
    let mut leaving = agents.pop().expect("two agents");
    leaving.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(
        leaving.wait(TIMEOUT).code(),
        Some(143),
        "{}",
        leaving.stderr()
    );
    let staying = &agent_metrics[..1];
    prometheus.wait_for(r#"tfcluster_restarts_total{cause="left"}"#, staying, 1.0);
    prometheus.wait_for("tfcluster_round", staying, 3.0);
    prometheus.wait_for("tfcluster_round_members", staying, 1.0);

    // Once the process is gone, nothing listens there.
    drop(agents);
    server.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(server.wait(TIMEOUT).code(), Some(0), "{}", server.stderr());
    assert_refused(server_metrics);
}

/// Nothing listens at `addr` any more.
fn assert_refused(addr: SocketAddr) {
    let refused = get(addr, "/healthz").expect_err("nothing listens");
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
}

#[test]
fn prometheus_sees_a_task_servers_connections_and_contexts() {
    let mut serve = Launch::start(
        &[
            "serve",
            "--cluster",
            r#"{"worker": ["127.0.0.1:1"]}"#,
            "--job",
            "worker",
            "--task",
            "0",
            "--bind",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[],
    );
    let line = serve
        .lines_with("serving /job:worker", 1, TIMEOUT)
        .remove(0);
    let address = line
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("an address")
        .to_owned();
    let metrics = metrics_addr(&serve);
    let prometheus = Prometheus::start(&[metrics]);
    prometheus.wait_for("up", &[metrics], 1.0);
    prometheus.wait_for("tfcluster_taskserver_contexts", &[metrics], 0.0);
    // A client that stays connected, holding its context.
    let cluster = format!(r#"{{"worker": ["{address}"]}}"#);
    let client = Launch::start(&["connect", "--cluster", &cluster, "--follow"], &[]);
    prometheus.wait_for("tfcluster_taskserver_connections", &[metrics], 1.0);
    prometheus.wait_for("tfcluster_taskserver_contexts", &[metrics], 1.0);
    let (code, body) = get(metrics, "/healthz").expect("an answer");
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    drop(client);
    serve.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(serve.wait(TIMEOUT).code(), Some(0), "{}", serve.stderr());
    assert_refused(metrics);
}

#[test]
fn a_metrics_port_in_use_or_unparsable_is_a_clear_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = super::tfcluster(&[
        "rendezvous",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        &addr,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--metrics {addr}")) && stderr.contains("in use"),
        "{stderr}"
    );
    let out = super::tfcluster(&[
        "run",
        "--local",
        "worker=1",
        "--metrics",
        "nowhere",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'nowhere'") && stderr.contains("--metrics"),
        "{stderr}"
    );
}
