//! What TLS with client certificates adds to a connect: `Context::connect_to_cluster` to 16
//! in-process `TaskServer`s on loopback, plaintext and mTLS (a fresh TLS 1.3 handshake per
//! task, ECDSA P-256 certificates from a test CA), in the same run. Only the connect is timed.
//! Client and servers share one tokio runtime of 2 worker threads.
//!
//! Seen on the 2-core development machine (shared with other work):
//! plaintext 4.0 ms, mTLS 25.8 ms (`cargo bench -p remote-connect --features tls --bench tls`).

// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use criterion::{Criterion, criterion_group, criterion_main};
use remote_connect::{ConnectOptions, Context, LocalDevice, RunningServer, TaskServer, TlsConfig};
use tf_oracle::TestCa;
use tokio::runtime::Runtime;

const TASKS: usize = 16;

fn config(ca: &TestCa, names: &[&str]) -> TlsConfig {
    let issued = ca.issue(names);
    TlsConfig::from_pem(issued.cert, issued.key, ca.cert_pem()).expect("a TLS config")
}

/// `TASKS` CPU-only servers on free loopback ports, under `tls` if given, and their cluster.
async fn start(tls: Option<&TlsConfig>) -> (ClusterSpec, Vec<RunningServer>) {
    let placeholder = ClusterSpec::builder()
        .job("worker", ["localhost:0"])
        .build()
        .expect("a placeholder spec");
    let mut servers = Vec::with_capacity(TASKS);
    for _ in 0..TASKS {
        let mut builder = TaskServer::builder(placeholder.clone(), "worker", 0)
            .devices(vec![LocalDevice::cpu()])
            .bind("127.0.0.1:0".parse().expect("an address"));
        if let Some(tls) = tls {
            builder = builder.tls(tls.clone());
        }
        servers.push(builder.start().await.expect("a TaskServer starts"));
    }
    let addresses = servers.iter().map(|s| s.local_addr().to_string());
    let spec = ClusterSpec::builder()
        .job("worker", addresses)
        .build()
        .expect("a valid spec");
    (spec, servers)
}

fn connect(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let ca = TestCa::new("bench CA");
    let server_tls = config(&ca, &["127.0.0.1"]);
    let client_tls = config(&ca, &["client"]);
    let (plain_spec, _plain) = rt.block_on(start(None));
    let (tls_spec, _tls) = rt.block_on(start(Some(&server_tls)));
    let mut group = c.benchmark_group("connect_16");
    let base = ConnectOptions::default().timeout(Duration::from_secs(60));
    group.bench_function("plaintext", |b| {
        b.iter_custom(|iters| timed(&rt, iters, &plain_spec, &base))
    });
    let secured = base.clone().tls(client_tls.clone());
    group.bench_function("mtls", |b| {
        b.iter_custom(|iters| timed(&rt, iters, &tls_spec, &secured))
    });
    group.finish();
}

/// `iters` connects, each followed by an untimed close.
fn timed(rt: &Runtime, iters: u64, spec: &ClusterSpec, options: &ConnectOptions) -> Duration {
    rt.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let ctx = Context::new();
            let start = Instant::now();
            ctx.connect_to_cluster(spec.clone(), options.clone())
                .await
                .expect("connects");
            total += start.elapsed();
            ctx.close().await.expect("closes");
        }
        total
    })
}

criterion_group!(benches, connect);
criterion_main!(benches);
