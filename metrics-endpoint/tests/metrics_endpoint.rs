//! The endpoint from outside, over TCP: its answers, a port in use, and attacks (idle
//! connections past the cap and a slow client) that must not keep a scrape out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics_endpoint::prometheus_client::metrics::counter::Counter;
use metrics_endpoint::prometheus_client::registry::Registry;
use metrics_endpoint::{Error, Health, Limits, MetricsEndpoint, Serving};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn serving(limits: Limits) -> (Serving, Health, Counter) {
    let mut registry = Registry::default();
    let rounds = Counter::default();
    registry.register("tfcluster_rounds", "Rounds", rounds.clone());
    let endpoint = MetricsEndpoint::bind("127.0.0.1:0".parse().unwrap(), limits)
        .await
        .unwrap();
    let health = Health::new();
    (
        endpoint.spawn(Arc::new(registry), health.clone()),
        health,
        rounds,
    )
}

/// Sends `request` as is and returns the whole answer (the server closes after one).
async fn ask(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    answer
}

async fn get(addr: SocketAddr, path: &str) -> String {
    ask(addr, &format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n")).await
}

#[tokio::test]
async fn answers_metrics_healthz_and_refuses_the_rest() {
    let (serving, health, rounds) = serving(Limits::default()).await;
    let addr = serving.local_addr();
    rounds.inc();
    let metrics = get(addr, "/metrics").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        metrics.contains("application/openmetrics-text"),
        "{metrics}"
    );
    assert!(metrics.contains("tfcluster_rounds_total 1"), "{metrics}");
    assert!(metrics.contains("# EOF"), "{metrics}");

    let ok = get(addr, "/healthz").await;
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("ok\n"),
        "{ok}"
    );
    health.set(false);
    assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 503"));

    assert!(get(addr, "/nope").await.starts_with("HTTP/1.1 404"));
    let post = ask(addr, "DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    let body = ask(
        addr,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    )
    .await;
    assert!(body.starts_with("HTTP/1.1 413"), "{body}");
    // Headers past the request size are refused, not buffered.
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(100_000)
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).contains(" 200 "));
}

#[tokio::test]
async fn a_port_in_use_is_an_error_naming_it() {
    let (serving, _, _) = serving(Limits::default()).await;
    let addr = serving.local_addr();
    let err = MetricsEndpoint::bind(addr, Limits::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Bind { .. }));
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_and_a_slow_client_do_not_keep_a_scrape_out() {
    let limits = Limits::default()
        .with_max_connections(8)
        .with_header_timeout(Duration::from_secs(30))
        .with_response_deadline(Duration::from_secs(60));
    let (serving, _, _) = serving(limits).await;
    let addr = serving.local_addr();
    // Far more idle connections than the cap, each holding its socket.
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // A slow client: a request's head a byte at a time.
    let slow = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\n" {
            if stream.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let metrics = get(addr, "/metrics").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    slow.abort();
    drop(idle);
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let limits = Limits::default().with_header_timeout(Duration::from_millis(300));
    let (serving, _, _) = serving(limits).await;
    let mut stream = TcpStream::connect(serving.local_addr()).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "still open after 5 s");
}
