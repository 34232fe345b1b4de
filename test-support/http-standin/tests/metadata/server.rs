//! What the stand-ins are built on: answers with their own headers and bytes, answers that come
//! later, `HEAD`, and waiting for requests to arrive.

use std::sync::Mutex;

use http_standin::{HttpServer, Response};
use tokio::sync::oneshot;

use super::raw::{self, BOUND};

#[tokio::test]
async fn json_by_default_and_headers_of_its_own() {
    let server = HttpServer::start(|request| match request.path.as_str() {
        "/json" => Response::json(r#"{"a":1}"#),
        "/text" => Response::text(404, "no such thing").with_header("etag", "abc"),
        _ => Response::bytes(200, vec![0xff, 0x00, 0xfe])
            .with_header("content-type", "application/octet-stream")
            .with_header("content-type", "application/text"),
    })
    .await;
    let json = raw::get(server.url(), "/json", &[]).await;
    assert_eq!(json.status, 200);
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_eq!(json.json(), serde_json::json!({"a": 1}));

    let text = raw::get(server.url(), "/text", &[]).await;
    assert_eq!(text.status, 404);
    assert_eq!(text.header("content-type"), Some("text/plain"));
    assert_eq!(text.header("etag"), Some("abc"));
    assert_eq!(text.text(), "no such thing");

    // Bytes that are no UTF-8, and a header set twice keeps its last value only.
    let bytes = raw::get(server.url(), "/bytes", &[]).await;
    assert_eq!(bytes.body, [0xff, 0x00, 0xfe]);
    let types: Vec<_> = bytes
        .headers
        .iter()
        .filter(|(n, _)| n == "content-type")
        .collect();
    assert_eq!(types.len(), 1, "{:?}", bytes.headers);
    assert_eq!(bytes.header("content-type"), Some("application/text"));
    server.stop().await;
}

#[tokio::test]
async fn head_answers_the_head_alone() {
    let server = HttpServer::start(|_| Response::text(200, "twelve bytes")).await;
    let head = raw::send(server.url(), "HEAD", "/", &[], "").await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("12"));
    assert!(head.body.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_later_answer_waits_for_its_future() {
    let (tx, rx) = oneshot::channel::<Response>();
    let rx = Mutex::new(Some(rx));
    let server = HttpServer::start(move |_| {
        let rx = rx.lock().unwrap().take().expect("one request");
        Response::later(async move { rx.await.expect("answer sent") })
    })
    .await;
    let url = server.url().to_owned();
    let pending = tokio::spawn(async move { raw::get(&url, "/wait", &[]).await });
    tokio::time::timeout(BOUND, server.wait_for_requests(1))
        .await
        .expect("request recorded");
    // Recorded, parked: nothing answered until the future resolves.
    assert!(!pending.is_finished());
    assert_eq!(server.requests()[0].path, "/wait");
    tx.send(Response::text(200, "now").with_header("x-late", "yes"))
        .unwrap();
    let answer = tokio::time::timeout(BOUND, pending).await.unwrap().unwrap();
    assert_eq!(answer.text(), "now");
    assert_eq!(answer.header("x-late"), Some("yes"));
    server.stop().await;
}

#[tokio::test]
async fn stop_closes_a_connection_that_is_never_answered() {
    let server = HttpServer::start(|_| Response::later(std::future::pending())).await;
    let url = server.url().trim_start_matches("http://").to_owned();
    let pending = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(&url).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut rest = Vec::new();
        // The server closes (or resets) the connection without a byte of answer.
        let _ = stream.read_to_end(&mut rest).await;
        rest
    });
    tokio::time::timeout(BOUND, server.wait_for_requests(1))
        .await
        .expect("request recorded");
    assert!(!pending.is_finished());
    tokio::time::timeout(BOUND, server.stop())
        .await
        .expect("stops");
    let rest = tokio::time::timeout(BOUND, pending).await.unwrap().unwrap();
    assert!(rest.is_empty(), "{rest:?}");
}
