//! A resolver without an injected client configures one from the process environment: the
//! in-cluster configuration first, the kubeconfig otherwise.
//!
//! kube reads the environment of the process, which a test must not change and cannot trust
//! (a CI job in a pod has an in-cluster configuration, a workstation a `~/.kube/config`). So
//! each case runs in a copy of this test binary started with an environment of the test's
//! making: nothing but `HOME=/nonexistent` and what the case adds.

use std::process::Command;
use std::time::Duration;

use cluster_resolver::kubernetes::{self, KubernetesClusterResolver};
use cluster_resolver::{ClusterResolver, Error};

use super::{by_selector, spec};
use http_standin::HttpServer;

/// Tells the copy which case to run.
const CASE: &str = "CLUSTER_RESOLVER_TEST_KUBE_CASE";

#[tokio::test]
async fn the_environment_configures_the_client() {
    match std::env::var(CASE).as_deref() {
        Ok("nothing") => return nothing_configured().await,
        Ok("kubeconfig") => return a_kubeconfig().await,
        _ => {}
    }
    in_a_copy("nothing", &[]).await;

    let server = HttpServer::start(by_selector).await;
    let kubeconfig = std::env::temp_dir().join(format!(
        "cluster-resolver-kubeconfig-{}.yaml",
        std::process::id()
    ));
    std::fs::write(
        &kubeconfig,
        http_standin::kubernetes::kubeconfig(server.url(), "ml-team"),
    )
    .unwrap();
    in_a_copy(
        "kubeconfig",
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    )
    .await;
    std::fs::remove_file(&kubeconfig).unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the copy listed through the kubeconfig");
    assert_eq!(requests[0].path, "/api/v1/namespaces/ml-team/pods");
    server.stop().await;
}

/// Neither configuration exists: the error says why each failed.
async fn nothing_configured() {
    let resolver = KubernetesClusterResolver::new().with_request_timeout(Duration::from_secs(5));
    let err = resolver.cluster_spec().await.unwrap_err();
    assert!(
        matches!(err, Error::Kubernetes(kubernetes::Error::Config { .. })),
        "{err:?}"
    );
    let text = err.to_string();
    for why in [
        "in-cluster config: failed to read an incluster environment variable",
        "; kubeconfig: failed to read kubeconfig from '\"/nonexistent/.kube/config\"'",
    ] {
        assert!(text.contains(why), "{text}");
    }
}

/// `KUBECONFIG` names a kubeconfig: its server is listed, in its context's namespace.
async fn a_kubeconfig() {
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_request_timeout(Duration::from_secs(5));
    assert_eq!(resolver.namespace().await.unwrap(), "ml-team");
    assert_eq!(
        resolver.cluster_spec().await.unwrap(),
        spec(
            r#"{"worker": ["10.44.1.21:8470", "10.44.2.9:8470", "10.44.3.7:8470", "10.44.1.23:8470"]}"#
        )
    );
}

/// Runs `case` of this test in a copy of the test binary whose environment is only
/// `HOME=/nonexistent` and `vars`, and checks that it ran and passed.
async fn in_a_copy(case: &str, vars: &[(&str, &str)]) {
    // The test's name as libtest knows it: its module path without the crate.
    let module = module_path!().split_once("::").expect("a module path").1;
    let mut copy = Command::new(std::env::current_exe().unwrap());
    copy.args([
        &format!("{module}::the_environment_configures_the_client"),
        "--exact",
        "--nocapture",
    ])
    .env_clear()
    .env("HOME", "/nonexistent")
    .env(CASE, case)
    .envs(vars.iter().copied());
    // Waited for off the runtime, which serves the loopback API server meanwhile.
    let out = tokio::task::spawn_blocking(move || copy.output())
        .await
        .unwrap()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "case {case}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
