//! A loopback HTTP/1.1 server for the network resolvers' tests (Kubernetes, GCE, TPU): it binds
//! 127.0.0.1:0, answers every request from a handler, records the requests for assertions, and
//! stops (closing kept-alive connections too) when the test says so.
//!
//! Just enough HTTP for hyper's client: request line, headers, `Content-Length` bodies,
//! keep-alive, and chunked streams of lines (a Kubernetes `?watch=true` answer).
//!
//! An answer may carry headers of its own (its content type among them) and may come later:
//! [`Response::later`] holds a future the connection awaits before answering, which is how the
//! metadata stand-ins answer a long poll only once a value changes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, still percent-encoded as sent.
    pub path: String,
    /// Query parameters, decoded (`+` and `%XX`), in order.
    pub query: Vec<(String, String)>,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Request {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of query parameter `name`.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the handler answers.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The body's bytes (JSON unless a `content-type` in `headers` says otherwise).
    pub body: Vec<u8>,
    /// Headers sent besides `content-length`, names as given. Without a `content-type` among
    /// them the answer is `application/json`.
    pub headers: Vec<(String, String)>,
    /// Wait this long before answering (to trip a client's deadline).
    pub delay: Option<Duration>,
    /// Instead of `body`: a chunked body, one chunk per line sent here, ended when every
    /// sender is dropped (a Kubernetes watch).
    pub lines: Option<broadcast::Sender<String>>,
    /// With `lines`: lines sent first, before any sent on `lines`.
    pub first: Vec<String>,
    /// Instead of this answer: the one the future yields, once it does.
    later: Option<Deferred>,
}

/// The future of a [`Response::later`]. Clones share it: the first connection to answer with
/// it awaits it, any other answers `500`.
#[derive(Clone)]
struct Deferred(Arc<Mutex<Option<LaterAnswer>>>);

/// The future a [`Response::later`] answers with.
type LaterAnswer = Pin<Box<dyn Future<Output = Response> + Send>>;

impl fmt::Debug for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Deferred(..)")
    }
}

impl Response {
    /// `200 OK` with a JSON body.
    pub fn json(body: impl Into<String>) -> Self {
        Self::status(200, body)
    }

    /// Any status with a JSON body.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Self::bytes(status, body.into().into_bytes())
    }

    /// Any status with a `text/plain` body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::status(status, body).with_header("content-type", "text/plain")
    }

    /// Any status with a body of any bytes (garbage, invalid UTF-8, megabytes), still labelled
    /// `application/json` unless a `content-type` header is added.
    pub fn bytes(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            body: body.into(),
            headers: Vec::new(),
            delay: None,
            lines: None,
            first: Vec::new(),
            later: None,
        }
    }

    /// The answer `answer` yields, sent once it is ready: the request is recorded at once, and
    /// the connection waits (until the server stops). `later(std::future::pending())` is a
    /// server that never answers.
    ///
    /// The future runs on the connection's task, so it may await channels, timers or other
    /// tasks; what it yields is answered as any other response (its `delay`, `lines` or own
    /// `later` included).
    pub fn later(answer: impl Future<Output = Response> + Send + 'static) -> Self {
        Self {
            later: Some(Deferred(Arc::new(Mutex::new(Some(Box::pin(answer)))))),
            ..Self::json("")
        }
    }

    /// The same answer with header `name: value`, replacing any header of that name (compared
    /// ignoring case).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The first value of header `name` (compared ignoring case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `200 OK` with a chunked body of the lines sent on `lines` from now on.
    pub fn lines(lines: &broadcast::Sender<String>) -> Self {
        Self {
            lines: Some(lines.clone()),
            ..Self::json("")
        }
    }

    /// `200 OK` with a chunked body of exactly `lines`, then its end: a watch the server ends
    /// at once, as kube-apiserver does after the `ERROR` event of a resource version too old.
    pub fn ended_lines(lines: Vec<String>) -> Self {
        // A sender nobody keeps: the stream ends once `first` is written.
        let (ended, _) = broadcast::channel(1);
        Self {
            first: lines,
            ..Self::lines(&ended)
        }
    }

    /// The same answer, after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// The header block: status line, `content-type` (JSON unless set), `headers`, then either
    /// `content-length` or, for a stream, `transfer-encoding: chunked`.
    fn head(&self, chunked: bool) -> String {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        if self.header("content-type").is_none() {
            head.push_str("content-type: application/json\r\n");
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if chunked {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
        } else {
            head.push_str(&format!("content-length: {}\r\n\r\n", self.body.len()));
        }
        head
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// A running server; [`stop`](Self::stop) it at the end of the test.
pub struct HttpServer {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    /// How many requests the log holds, for [`wait_for_requests`](Self::wait_for_requests).
    seen: watch::Sender<usize>,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Starts a server on 127.0.0.1 with an OS-chosen port, answering with `handler`.
    pub async fn start<F>(handler: F) -> Self
    where
        F: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (seen, _) = watch::channel(0);
        let handler: Arc<Handler> = Arc::new(handler);
        let (shutdown, mut stopped) = oneshot::channel();
        let log = Log {
            requests: Arc::clone(&requests),
            seen: seen.clone(),
        };
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { break };
                        // An answer's head and body are two writes: without this, Nagle's
                        // algorithm holds the body for the client's delayed ACK (~40 ms).
                        let _ = stream.set_nodelay(true);
                        connections.spawn(serve(stream, Arc::clone(&handler), log.clone()));
                    }
                }
            }
            // Dropping the set aborts connections the client keeps alive.
            connections.abort_all();
        });
        Self {
            url,
            requests,
            seen,
            shutdown,
            task,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("request log").clone()
    }

    /// Waits until at least `count` requests have arrived. A request counts once its handler
    /// has answered (an answer that comes [later](Response::later) is still pending then), so
    /// a test can wait for a client's long poll to be parked before changing what it waits on.
    /// Bound it with a timeout: it waits as long as no such request comes.
    pub async fn wait_for_requests(&self, count: usize) {
        let mut seen = self.seen.subscribe();
        // Fails only if the sender is gone, and `self` holds it.
        let _ = seen.wait_for(|n| *n >= count).await;
    }

    /// Stops accepting, closes open connections, and waits for the server task.
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.task.await;
    }
}

/// The request log and its count, shared by every connection.
#[derive(Clone)]
struct Log {
    requests: Arc<Mutex<Vec<Request>>>,
    seen: watch::Sender<usize>,
}

impl Log {
    fn push(&self, request: Request) {
        let mut requests = self.requests.lock().expect("request log");
        requests.push(request);
        self.seen.send_replace(requests.len());
    }
}

/// Answers requests on one connection until the client closes it.
async fn serve(stream: TcpStream, handler: Arc<Handler>, log: Log) {
    let mut stream = BufReader::new(stream);
    while let Some(request) = read_request(&mut stream).await {
        let mut response = handler(&request);
        let head_only = request.method == "HEAD";
        // Subscribed before the request is logged: a test that saw the request sends lines
        // that reach it. The answer's own sender is dropped here, so the stream ends when the
        // test drops its senders (as a server ends a watch at its `timeoutSeconds`).
        let mut lines = response.lines.take().map(|lines| lines.subscribe());
        log.push(request);
        loop {
            if let Some(delay) = response.delay.take() {
                tokio::time::sleep(delay).await;
            }
            let Some(later) = response.later.take() else {
                break;
            };
            let answer = later.0.lock().expect("deferred answer").take();
            response = match answer {
                Some(answer) => answer.await,
                None => Response::text(500, "this deferred answer was already sent"),
            };
            lines = response.lines.take().map(|lines| lines.subscribe());
        }
        let stream = stream.get_mut();
        if let Some(lines) = lines {
            let first = std::mem::take(&mut response.first);
            if stream_lines(stream, &response, first, lines).await.is_err() {
                return;
            }
            continue;
        }
        // A `HEAD` answer is the head alone, its `content-length` the body's it stands for.
        let body: &[u8] = if head_only { &[] } else { &response.body };
        if stream
            .write_all(response.head(false).as_bytes())
            .await
            .is_err()
            || stream.write_all(body).await.is_err()
        {
            return;
        }
    }
}

/// `response`'s head with a chunked body: each line of `first`, then each line received,
/// newline-terminated, as one chunk, until every sender is gone.
async fn stream_lines(
    stream: &mut TcpStream,
    response: &Response,
    first: Vec<String>,
    mut lines: broadcast::Receiver<String>,
) -> std::io::Result<()> {
    stream.write_all(response.head(true).as_bytes()).await?;
    for line in first {
        write_chunk(stream, &line).await?;
    }
    loop {
        match lines.recv().await {
            Ok(line) => write_chunk(stream, &line).await?,
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    stream.write_all(b"0\r\n\r\n").await
}

/// `line` and its newline as one chunk.
async fn write_chunk(stream: &mut TcpStream, line: &str) -> std::io::Result<()> {
    let chunk = format!("{:x}\r\n{line}\n\r\n", line.len() + 1);
    stream.write_all(chunk.as_bytes()).await
}

/// The next request, or `None` at end of stream or on anything unparsable.
async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if stream.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Request {
        method,
        path: path.to_owned(),
        query: query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn decode(s: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'+', _, _) => out.push(b' '),
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 2;
            }
            (b, _, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        410 => "Gone",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[test]
fn form_decoding() {
    assert_eq!(decode("job-name%3Dworker-pod"), "job-name=worker-pod");
    assert_eq!(decode("a+b%2Cc%"), "a b,c%");
}
