//! Plain HTTP/1.1 to a metadata service, each request (connect, send, the whole answer)
//! within one deadline and its answer bounded: hyper 1 and hyper-util's pooled client, the
//! stack the workspace's other HTTP clients use. Metadata services speak plain HTTP on a
//! link-local address, so no TLS is linked.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The largest answer read: every document watched here is a few hundred bytes (Azure's
/// events document a few KiB); a server sending more is broken, and must not fill memory.
pub(crate) const MAX_BODY: usize = 64 << 10;

/// A request that failed, naming its URL.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// The URL does not parse (a bad endpoint variable is caught before; kept for safety).
    #[error("{url}: not a URL: {source}")]
    Url {
        url: String,
        #[source]
        source: hyper::http::Error,
    },
    /// Connecting or sending failed (refused, reset, no route).
    #[error("{url}: {source}")]
    Send {
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// The whole exchange took longer than its deadline.
    #[error("{url}: no answer within {after:?}")]
    Timeout { url: String, after: Duration },
    /// The answer's body failed or passed [`MAX_BODY`].
    #[error(
        "{url}: the answer's body could not be read whole (at most {MAX_BODY} bytes): {source}"
    )]
    Body {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// An answer: its status, `ETag` header, and body as text (bytes that are not UTF-8
/// replaced: they are shown, not trusted).
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) etag: Option<String>,
    pub(crate) body: String,
}

/// A pooled plain-HTTP client.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Http {
    pub(crate) fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        connector.set_nodelay(true);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Sends `method url` with `headers` and `body`; the whole exchange within `deadline`.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
        deadline: Duration,
    ) -> Result<Answer, HttpError> {
        let mut request = Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = Full::new(Bytes::from(body.unwrap_or_default()));
        let request = request.body(body).map_err(|source| HttpError::Url {
            url: url.to_owned(),
            source,
        })?;
        let exchange = async {
            let response =
                self.client
                    .request(request)
                    .await
                    .map_err(|source| HttpError::Send {
                        url: url.to_owned(),
                        source,
                    })?;
            let status = response.status().as_u16();
            let etag = response
                .headers()
                .get(hyper::header::ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let bytes = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|source| HttpError::Body {
                    url: url.to_owned(),
                    source,
                })?
                .to_bytes();
            Ok(Answer {
                status,
                etag,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            })
        };
        tokio::time::timeout(deadline, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(HttpError::Timeout {
                    url: url.to_owned(),
                    after: deadline,
                })
            })
    }
}
