//! JSON over HTTP for Google's APIs, with a deadline on every request.
//!
//! hyper 1 + hyper-util's pooled client + hyper-rustls: the stack kube's client is built on, so
//! the `kubernetes` and `gce` features together compile one HTTP/TLS stack; reqwest would put
//! its own layer (and dependencies) on top of the same hyper for the three calls made here.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::de::DeserializeOwned;

use crate::Error;

/// Answers larger than this are refused: the largest document read here (a page of up to 500
/// instances) is well under a megabyte, and a runaway server must not exhaust memory.
const MAX_BODY: usize = 16 << 20;

/// How much of a non-JSON error body an error message quotes.
const MAX_QUOTED: usize = 300;

/// The HTTPS client: TLS (rustls) over TCP.
type TlsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An HTTP client whose every request (connect, send, and reading the whole answer) must end
/// within one deadline.
pub(crate) struct HttpClient {
    /// For `http://` URLs: the metadata server, and test servers.
    plain: Client<HttpConnector, Full<Bytes>>,
    /// For `https://` URLs, built on first use: loading the system's root certificates can
    /// fail on a machine without them, which must not matter to plain-HTTP users.
    tls: OnceLock<Result<TlsClient, String>>,
    timeout: Duration,
}

impl HttpClient {
    /// A client whose requests each end within `timeout`.
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            plain: pooled(connector(timeout)),
            tls: OnceLock::new(),
            timeout,
        }
    }

    /// The per-request deadline.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends a request and decodes the 2xx answer's JSON body as `T`.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        url: &str,
        headers: &[(&'static str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, Error> {
        let bytes = self.send(method.clone(), url, headers, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| Error::InvalidResponse {
            operation: operation(&method, url),
            reason: format!(
                "not the expected JSON document: {}",
                cluster_spec::__private::quote::excerpt(&e.to_string(), 0)
            ),
        })
    }

    /// Sends a request and returns the 2xx answer's body as text.
    pub(crate) async fn text(
        &self,
        url: &str,
        headers: &[(&'static str, &str)],
    ) -> Result<String, Error> {
        let bytes = self.send(Method::GET, url, headers, None).await?;
        String::from_utf8(bytes.to_vec()).map_err(|e| Error::InvalidResponse {
            operation: operation(&Method::GET, url),
            reason: format!("not UTF-8: {e}"),
        })
    }

    /// Sends a request and returns the body of a 2xx answer; any other status is
    /// [`Error::HttpStatus`] with the API's message.
    async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&'static str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Bytes, Error> {
        let op = || operation(&method, url);
        // hyper's own message is only a category (`client error (Connect)`): the message
        // carries the whole chain down to the cause (`Connection refused`).
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| Error::Request {
            operation: op(),
            source,
        };
        let mut request = Request::builder()
            .method(method.clone())
            .uri(url)
            .header("accept", "application/json")
            .header(
                "user-agent",
                concat!("cluster-resolver/", env!("CARGO_PKG_VERSION")),
            );
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = match body {
            Some(json) => {
                request = request.header("content-type", "application/json");
                Full::new(Bytes::from(json.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        let request = request.body(body).map_err(|e| failed(Box::new(e)))?;
        let exchange = async {
            if url.starts_with("https://") {
                exchange(self.tls_client().map_err(|e| failed(e.into()))?, request).await
            } else {
                exchange(&self.plain, request).await
            }
            .map_err(failed)
        };
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| Error::Timeout {
                operation: op(),
                timeout: self.timeout,
            })??;
        if !status.is_success() {
            return Err(Error::HttpStatus {
                operation: op(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        Ok(bytes)
    }

    fn tls_client(&self) -> Result<&TlsClient, String> {
        self.tls
            .get_or_init(|| {
                // ring, explicitly: rustls's process default would be ambiguous (a panic) if
                // another crate in the program also enabled aws-lc-rs.
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let https = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_provider_and_native_roots(provider)
                    .map_err(|e| format!("cannot load the system's root certificates: {e}"))?
                    .https_only()
                    .enable_http1()
                    .wrap_connector(connector(self.timeout));
                Ok(pooled(https))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// `METHOD url`, how errors name a request.
fn operation(method: &Method, url: &str) -> String {
    format!("{method} {url}")
}

/// A TCP connector that gives up connecting after `timeout` and also accepts `https://` URIs
/// (TLS wraps it for those).
fn connector(timeout: Duration) -> HttpConnector {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(timeout));
    http.enforce_http(false);
    http
}

/// A pooled client over `connector`, whose idle connections expire on tokio's timer.
fn pooled<C: Connect + Clone>(connector: C) -> Client<C, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

/// One request and its whole (size-limited) answer.
async fn exchange<C>(
    client: &Client<C, Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), Box<dyn std::error::Error + Send + Sync>>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let response = client.request(request).await?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await?
        .to_bytes();
    Ok((status, body))
}

/// Google's `{"error": {"message": …}}`, else (a prefix of) the body as text.
fn error_message(body: &[u8]) -> String {
    let google = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| match &v["error"] {
            serde_json::Value::Object(e) => e.get("message")?.as_str().map(str::to_owned),
            // OAuth-style errors: {"error": "invalid_grant", "error_description": "…"}
            serde_json::Value::String(s) => Some(match v["error_description"].as_str() {
                Some(d) => format!("{s}: {d}"),
                None => s.clone(),
            }),
            _ => None,
        });
    google.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        match text.char_indices().nth(MAX_QUOTED) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None if text.is_empty() => "(empty body)".to_owned(),
            None => text.to_owned(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_error_messages_are_extracted() {
        let body = br#"{"error": {"code": 404, "message": "The resource 'projects/p/zones/z/instanceGroups/g' was not found", "errors": [], "status": "NOT_FOUND"}}"#;
        assert_eq!(
            error_message(body),
            "The resource 'projects/p/zones/z/instanceGroups/g' was not found"
        );
        assert_eq!(
            error_message(br#"{"error": "invalid_scope", "error_description": "bad scope"}"#),
            "invalid_scope: bad scope"
        );
    }

    #[test]
    fn other_bodies_are_quoted_shortened() {
        assert_eq!(error_message(b"  nope \n"), "nope");
        assert_eq!(error_message(b""), "(empty body)");
        let long = "é".repeat(1000);
        let msg = error_message(long.as_bytes());
        assert_eq!(msg.chars().count(), MAX_QUOTED + 1);
    }
}
