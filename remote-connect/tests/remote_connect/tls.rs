//! TLS with client certificates between our Context and TaskServers: certificates made by a
//! test CA when the test runs (`tf_oracle::TestCa`); every refusal names the task and comes
//! within the deadline.

use std::time::{Duration, Instant};

use cluster_proto::GetStatusRequest;
use cluster_proto::worker_service_client::WorkerServiceClient;
use cluster_spec::__private::error_chain::Chain;
use cluster_spec::ClusterSpec;
use remote_connect::tonic::transport::{Certificate, ClientTlsConfig, Endpoint};
use remote_connect::{
    Access, ConnectOptions, Context, RunningServer, TaskHealth, TaskId, TaskServer, TlsConfig,
    TlsError,
};
use tf_oracle::TestCa;

use crate::cluster::{discovery_failures, fast, placeholder, server};

/// A TLS config for a peer called `names` (its certificate's subject alternative names).
fn config(ca: &TestCa, names: &[&str]) -> TlsConfig {
    let issued = ca.issue(names);
    TlsConfig::from_pem(issued.cert, issued.key, ca.cert_pem()).unwrap()
}

/// A TLS server for `job`, task 0, on a free loopback port, its certificate for `localhost`
/// and 127.0.0.1.
async fn tls_server(ca: &TestCa, job: &str) -> RunningServer {
    tls_server_named(ca, job, &["localhost", "127.0.0.1"]).await
}

async fn tls_server_named(ca: &TestCa, job: &str, names: &[&str]) -> RunningServer {
    TaskServer::builder(placeholder(job), job, 0)
        .with_bind("127.0.0.1:0".parse().unwrap())
        .with_access(Access::default().with_tls(config(ca, names)))
        .start()
        .await
        .unwrap()
}

/// `worker` tasks at these servers' addresses, by `host` (`localhost` or `127.0.0.1`).
fn spec_of(servers: &[RunningServer], host: &str) -> ClusterSpec {
    let addresses = servers
        .iter()
        .map(|s| format!("{host}:{}", s.local_addr().port()));
    ClusterSpec::builder()
        .job("worker", addresses)
        .build()
        .unwrap()
}

/// The failures of a connect refused within the deadline.
async fn refused(spec: ClusterSpec, options: ConnectOptions) -> Vec<String> {
    discovery_failures(spec, options, Duration::from_secs(3)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_over_mutual_tls_by_name_and_by_ip() {
    let ca = TestCa::new("cluster CA");
    let servers = vec![
        tls_server(&ca, "worker").await,
        tls_server(&ca, "worker").await,
    ];
    for host in ["localhost", "127.0.0.1"] {
        let ctx = Context::new();
        ctx.connect_to_cluster(
            spec_of(&servers, host),
            fast().with_tls(config(&ca, &["client"])),
        )
        .await
        .unwrap();
        // Both workers' CPUs and this process's own (its server under the same TLS).
        assert_eq!(ctx.list_logical_devices().len(), 3, "via {host}");
        for s in &servers {
            assert_eq!(s.contexts().len(), 1, "via {host}");
        }
        // Later RPCs reuse the TLS channels.
        let health = ctx.check_alive(&TaskId::new("worker", 1)).await.unwrap();
        assert!(matches!(health, TaskHealth::Alive), "{health:?}");
        ctx.close().await.unwrap();
    }
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_a_certificate_is_refused() {
    let ca = TestCa::new("cluster CA");
    let s = tls_server(&ca, "worker").await;
    // tonic's own client, trusting the CA but presenting no certificate.
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca.cert_pem()));
    let start = Instant::now();
    let outcome = async {
        let channel =
            Endpoint::from_shared(format!("https://localhost:{}", s.local_addr().port()))?
                .tls_config(tls)?
                .connect()
                .await?;
        WorkerServiceClient::new(channel)
            .get_status(GetStatusRequest {})
            .await
            .map_err(Box::<dyn std::error::Error>::from)
    };
    let err = tokio::time::timeout(Duration::from_secs(2), outcome)
        .await
        .expect("refused within the deadline")
        .unwrap_err();
    // TLS 1.3: the refusal reaches the client as a closed connection on its first RPC.
    let text = Chain(&*err).to_string();
    assert!(text.contains("transport error"), "{text}");
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(s.contexts().is_empty());
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_refused_both_ways() {
    let ca = TestCa::new("cluster CA");
    let other = TestCa::new("another CA");
    let servers = vec![tls_server(&ca, "worker").await];
    let spec = spec_of(&servers, "localhost");

    // Our client's certificate from another CA: the server refuses it.
    let issued = other.issue(&["client"]);
    let stranger = TlsConfig::from_pem(issued.cert, issued.key, ca.cert_pem()).unwrap();
    let failures = refused(spec.clone(), fast().with_tls(stranger)).await;
    assert_eq!(failures.len(), 1);
    let port = servers[0].local_addr().port();
    assert!(failures[0].starts_with(&format!("/job:worker/replica:0/task:0 at localhost:{port}")));
    assert!(
        failures[0].contains("the task likely refused this client's certificate"),
        "{}",
        failures[0]
    );

    // Our client trusting only another CA: it refuses the server.
    let distrustful = config(&other, &["client"]);
    let failures = refused(spec, fast().with_tls(distrustful)).await;
    assert!(
        failures[0].contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        failures[0]
    );
    assert!(servers[0].contexts().is_empty());
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_for_another_host_is_refused() {
    let ca = TestCa::new("cluster CA");
    let servers = vec![tls_server_named(&ca, "worker", &["localhost"]).await];
    // The certificate names localhost, not 127.0.0.1.
    let failures = refused(
        spec_of(&servers, "127.0.0.1"),
        fast().with_tls(config(&ca, &["client"])),
    )
    .await;
    assert!(
        failures[0].contains("certificate not valid for name \"127.0.0.1\""),
        "{}",
        failures[0]
    );
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_tls_peers_fail_cleanly_against_each_other() {
    let ca = TestCa::new("cluster CA");
    let tls = vec![tls_server(&ca, "worker").await];
    let failures = refused(spec_of(&tls, "localhost"), fast()).await;
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].starts_with("/job:worker/replica:0/task:0 at localhost:"),
        "{}",
        failures[0]
    );

    let plain = vec![server("worker").await];
    let failures = refused(
        spec_of(&plain, "localhost"),
        fast().with_tls(config(&ca, &["client"])),
    )
    .await;
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].starts_with("/job:worker/replica:0/task:0 at localhost:"),
        "{}",
        failures[0]
    );
    assert!(failures[0].contains("cannot connect"), "{}", failures[0]);
    for s in tls.into_iter().chain(plain) {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_pem_is_refused_naming_the_part_and_file() {
    let ca = TestCa::new("cluster CA");
    let issued = ca.issue(&["localhost"]);
    let err = TlsConfig::from_pem("not PEM", issued.key.clone(), ca.cert_pem()).unwrap_err();
    assert_eq!(
        Chain(&err).to_string(),
        "the TLS certificate chain (given PEM) is unusable: no items found"
    );
    // A certificate where the key should be.
    let err =
        TlsConfig::from_pem(issued.cert.clone(), issued.cert.clone(), ca.cert_pem()).unwrap_err();
    assert!(
        matches!(
            err,
            TlsError::Pem {
                part: "private key",
                ..
            }
        ),
        "{err}"
    );
    // Another certificate's key.
    let stray = ca.issue(&["localhost"]).key;
    let err = TlsConfig::from_pem(issued.cert.clone(), stray, ca.cert_pem()).unwrap_err();
    assert!(
        Chain(&err)
            .to_string()
            .starts_with("the TLS private key (given PEM) is refused:"),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("remote-connect-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = ca.write(&dir, "server", &["localhost"]);
    TlsConfig::from_files(&files.cert, &files.key, &files.ca).unwrap();
    let missing = dir.join("missing.crt");
    let err = TlsConfig::from_files(&files.cert, &files.key, &missing).unwrap_err();
    assert!(
        Chain(&err).to_string().starts_with(&format!(
            "cannot read the TLS CA certificates {}:",
            missing.display()
        )),
        "{err}"
    );
    let err = TlsConfig::from_files(&files.cert, &files.ca, &files.ca).unwrap_err();
    assert_eq!(
        Chain(&err).to_string(),
        format!(
            "the TLS private key ({}) is unusable: no items found",
            files.ca.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
