//! `serve` and `connect` with TLS client certificates (`--tls-cert`, `--tls-key`, `--tls-ca`)
//! and `serve --allow`: certificates from a test CA made when the test runs.

use std::path::PathBuf;

use tf_oracle::{PemFiles, TestCa};

use super::network::{Served, serve_with};
use super::{stdout, tfcluster};

/// A fresh directory for this test's PEM files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tfcluster-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tls_flags(files: &PemFiles) -> [String; 6] {
    [
        "--tls-cert".into(),
        files.cert.display().to_string(),
        "--tls-key".into(),
        files.key.display().to_string(),
        "--tls-ca".into(),
        files.ca.display().to_string(),
    ]
}

fn cluster_of(served: &Served) -> String {
    format!(r#"{{"worker": ["{}"]}}"#, served.address)
}

#[test]
fn connect_with_tls_client_certificates_to_a_tls_serve() {
    let dir = scratch("tls");
    let ca = TestCa::new("cluster CA");
    let server = ca.write(&dir, "server", &["127.0.0.1", "localhost"]);
    let client = ca.write(&dir, "client", &["client"]);
    let server_flags = tls_flags(&server);
    let served = serve_with(
        "worker",
        0,
        &server_flags.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let cluster = cluster_of(&served);

    let client_flags = tls_flags(&client);
    let mut args = vec!["connect", "--cluster", &cluster, "--timeout", "2s"];
    args.extend(client_flags.iter().map(String::as_str));
    let out = tfcluster(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains(&served.address), "{text}");

    // Without TLS flags: refused, naming the task.
    let out = tfcluster(&["connect", "--cluster", &cluster, "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "/job:worker/replica:0/task:0 at {}",
            served.address
        )),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tls_flags_come_all_three_or_none_and_bad_files_are_named() {
    let out = tfcluster(&[
        "connect",
        "--cluster",
        r#"{"w": ["a:1"]}"#,
        "--tls-cert",
        "c.pem",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tls-key <FILE>") && stderr.contains("--tls-ca <FILE>"),
        "{stderr}"
    );

    let dir = scratch("tls-bad");
    let ca = TestCa::new("cluster CA");
    let files = ca.write(&dir, "server", &["localhost"]);
    let key = files.key.display().to_string();
    let out = tfcluster(&[
        "serve",
        "--cluster",
        r#"{"worker": ["localhost:0"]}"#,
        "--job",
        "worker",
        "--task",
        "0",
        "--tls-cert",
        &key,
        "--tls-key",
        &key,
        "--tls-ca",
        &files.ca.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("the TLS certificate chain ({key}) is unusable")),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_allow_refuses_clients_outside_its_networks() {
    // 192.0.2.1 is reserved for documentation: never this test's address.
    let closed = serve_with("worker", 0, &["--allow", "192.0.2.1,2001:db8::/32"]);
    let out = tfcluster(&[
        "connect",
        "--cluster",
        &cluster_of(&closed),
        "--timeout",
        "2s",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "/job:worker/replica:0/task:0 at {}",
            closed.address
        )),
        "{stderr}"
    );

    let open = serve_with("worker", 0, &["--allow", "192.0.2.0/24,127.0.0.0/8"]);
    let out = tfcluster(&[
        "connect",
        "--cluster",
        &cluster_of(&open),
        "--timeout",
        "2s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = tfcluster(&[
        "serve",
        "--cluster",
        r#"{"w": ["a:1"]}"#,
        "--allow",
        "10.0.0.1/8",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "invalid network \"10.0.0.1/8\": host bits are set (the network is 10.0.0.0/8)"
        ),
        "{stderr}"
    );
}
