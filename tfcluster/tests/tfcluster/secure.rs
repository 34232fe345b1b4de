//! `serve` and `connect` with TLS client certificates (`--tls-cert`, `--tls-key`, `--tls-ca`)
//! and `serve --allow`: certificates from a test CA made when the test runs.

use std::process::Output;

use tf_oracle::{PemFiles, TestCa};

use super::network::{Served, serve_with};
use super::{scratch, stdout, tfcluster};

/// `--tls-cert FILE --tls-key FILE --tls-ca FILE`.
fn tls_flags(files: &PemFiles) -> Vec<String> {
    [
        ("--tls-cert", &files.cert),
        ("--tls-key", &files.key),
        ("--tls-ca", &files.ca),
    ]
    .into_iter()
    .flat_map(|(flag, path)| [flag.to_owned(), path.display().to_string()])
    .collect()
}

/// `tfcluster connect` to the one task `served`, with `more` arguments.
fn connect(served: &Served, more: &[String]) -> Output {
    let cluster = format!(r#"{{"worker": ["{}"]}}"#, served.address);
    let mut args = vec!["connect", "--cluster", &cluster, "--timeout", "2s"];
    args.extend(more.iter().map(String::as_str));
    tfcluster(&args)
}

/// `out` failed (exit status `code`) and its stderr holds `expected`.
fn assert_failed(out: &Output, code: i32, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
}

/// Which task a failed connect to `served` names.
fn names_the_task(served: &Served) -> String {
    format!("/job:worker/replica:0/task:0 at {}", served.address)
}

#[test]
fn connect_with_tls_client_certificates_to_a_tls_serve() {
    let dir = scratch("tls");
    let dir = dir.path();
    let ca = TestCa::new("cluster CA");
    let server = tls_flags(&ca.write(dir, "server", &["127.0.0.1", "localhost"]));
    let client = tls_flags(&ca.write(dir, "client", &["client"]));
    let served = serve_with(
        "worker",
        0,
        &server.iter().map(String::as_str).collect::<Vec<_>>(),
    );

    let out = connect(&served, &client);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains(&served.address), "{text}");

    // Without TLS flags: refused, naming the task.
    assert_failed(&connect(&served, &[]), 1, &names_the_task(&served));
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
    assert_failed(&out, 2, "--tls-key <FILE>");
    assert_failed(&out, 2, "--tls-ca <FILE>");

    let dir = scratch("tls-bad");
    let ca = TestCa::new("cluster CA");
    let mut files = ca.write(dir.path(), "server", &["localhost"]);
    // A key where the certificate should be.
    files.cert = files.key.clone();
    let mut args = ["serve", "--cluster", r#"{"worker": ["localhost:0"]}"#]
        .map(str::to_owned)
        .to_vec();
    args.extend(["--job", "worker", "--task", "0"].map(str::to_owned));
    args.extend(tls_flags(&files));
    let out = tfcluster(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let expected = format!(
        "the TLS certificate chain ({}) is unusable",
        files.key.display()
    );
    assert_failed(&out, 1, &expected);
}

#[test]
fn serve_allow_refuses_clients_outside_its_networks() {
    // 192.0.2.1 is reserved for documentation: never this test's address.
    let closed = serve_with("worker", 0, &["--allow", "192.0.2.1,2001:db8::/32"]);
    assert_failed(&connect(&closed, &[]), 1, &names_the_task(&closed));

    let open = serve_with("worker", 0, &["--allow", "192.0.2.0/24,127.0.0.0/8"]);
    let out = connect(&open, &[]);
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
    assert_failed(
        &out,
        2,
        "invalid network \"10.0.0.1/8\": host bits are set (the network is 10.0.0.0/8)",
    );
}
