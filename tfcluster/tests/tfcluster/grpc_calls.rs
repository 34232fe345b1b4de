//! gRPC calls for the attacks that speak it: tonic channels on a runtime of their own, and
//! unary calls whose body is given as bytes (whole gRPC frames, gzip-compressed).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use tonic::codegen::{Bytes, Service, http};
use tonic::transport::{Channel, Endpoint};

/// A runtime for the tonic clients of the attacks that speak gRPC.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// One new connection (a channel) to `addr`.
pub(crate) async fn channel(addr: SocketAddr) -> Result<Channel, String> {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))
}

/// A unary call to `path` on a connection of its own, whose body is exactly `body` (whole
/// gRPC frames, gzip-compressed): the `grpc-status` and `grpc-message` of the answer, or why
/// none came within `deadline`; and when, after `started`.
pub(crate) async fn gzip_call(
    addr: SocketAddr,
    path: &'static str,
    body: Bytes,
    deadline: Duration,
    started: Instant,
) -> (Result<String, String>, Duration) {
    let call = async {
        let mut channel = channel(addr).await?;
        let request = http::Request::post(format!("http://{addr}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("grpc-encoding", "gzip")
            .body(tonic::body::Body::new(Full::new(body)))
            .unwrap();
        std::future::poll_fn(|cx| channel.poll_ready(cx))
            .await
            .map_err(|e| format!("channel: {e:?}"))?;
        let response = channel
            .call(request)
            .await
            .map_err(|e| format!("request: {e:?}"))?;
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("response body: {e:?}"))?;
        let trailers = body.trailers().cloned().unwrap_or_default();
        let field = |name: &str| {
            headers
                .get(name)
                .or_else(|| trailers.get(name))
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let code = field("grpc-status").ok_or("an answer without grpc-status")?;
        let code = tonic::Code::from_bytes(code.as_bytes());
        let message = field("grpc-message").unwrap_or_default();
        Ok(format!("{code:?}: {}", percent_decoded(&message)))
    };
    let answer = tokio::time::timeout(deadline, call)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {deadline:?}")));
    (answer, started.elapsed())
}

/// A `grpc-message` as text (gRPC percent-encodes it).
fn percent_decoded(message: &str) -> String {
    let mut bytes = Vec::with_capacity(message.len());
    let mut rest = message.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if first == b'%' => {
                bytes.push(byte);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(first);
                rest = tail;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
