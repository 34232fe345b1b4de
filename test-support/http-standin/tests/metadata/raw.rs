//! A raw HTTP/1.1 client: one request per connection, written by hand, the answer read by its
//! `content-length`. Every call is bounded, so no test hangs.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The longest any single exchange may take in these tests.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

/// An answer as it came off the wire.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// Header names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("UTF-8 body")
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// `method target` to `host` (`127.0.0.1:port`) with `headers` and `body`, its answer within
/// [`BOUND`].
pub(crate) async fn send(
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    tokio::time::timeout(BOUND, exchange(host, method, target, headers, body))
        .await
        .unwrap_or_else(|_| panic!("{method} {target}: no answer within {BOUND:?}"))
}

/// A `GET`.
pub(crate) async fn get(host: &str, target: &str, headers: &[(&str, &str)]) -> Answer {
    send(host, "GET", target, headers, "").await
}

async fn exchange(
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let host = host.trim_start_matches("http://");
    let stream = TcpStream::connect(host).await.expect("connect");
    let mut stream = BufReader::new(stream);
    let mut request = format!("{method} {target} HTTP/1.1\r\nhost: {host}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream
        .get_mut()
        .write_all(request.as_bytes())
        .await
        .expect("write request");

    let mut line = String::new();
    stream.read_line(&mut line).await.expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("header");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().expect("content-length"))
        .unwrap_or(0);
    let mut body = vec![0; if method == "HEAD" { 0 } else { length }];
    stream.read_exact(&mut body).await.expect("body");
    Answer {
        status,
        headers,
        body,
    }
}
