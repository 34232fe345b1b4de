//! One request's answer: `/metrics`, `/healthz`, 404 elsewhere, 405 for methods other than
//! GET and HEAD, 413 for a request that carries a body.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body;
use hyper::header::{ALLOW, CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::registry::Registry;

use crate::Health;

/// OpenMetrics 1.0, what prometheus-client's encoder writes and Prometheus ≥ 2.5 asks for.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The answer to `request`.
pub(crate) fn answer<B: Body>(
    request: &Request<B>,
    registry: &Registry,
    health: &Health,
) -> Response<Full<Bytes>> {
    // No body is accepted: a GET has none, and reading one would be memory an attacker chose.
    let has_body = request.body().size_hint().lower() > 0
        || request.body().size_hint().upper() != Some(0)
        || request
            .headers()
            .contains_key(hyper::header::TRANSFER_ENCODING);
    let response = if has_body {
        plain(StatusCode::PAYLOAD_TOO_LARGE, "no body accepted\n")
    } else if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    } else {
        match request.uri().path() {
            "/metrics" => metrics(registry),
            "/healthz" if health.is_healthy() => plain(StatusCode::OK, "ok\n"),
            "/healthz" => plain(StatusCode::SERVICE_UNAVAILABLE, "unhealthy\n"),
            _ => plain(
                StatusCode::NOT_FOUND,
                "not found: try /metrics or /healthz\n",
            ),
        }
    };
    with_close(response)
}

fn metrics(registry: &Registry) -> Response<Full<Bytes>> {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, registry) {
        Ok(()) => {
            let mut r = Response::new(Full::new(Bytes::from(text)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS));
            r
        }
        // Only a metric's own Display could fail here; say so rather than send half a page.
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding metrics failed\n",
        ),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// One request per connection: a scrape every few seconds gains nothing from keep-alive, and
/// a connection that cannot linger cannot be held.
fn with_close(mut r: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}
