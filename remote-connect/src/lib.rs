//! # remote-connect — TensorFlow's distributed connect layer, over TensorFlow's own gRPC
//!
//! The networked layer of the tfcluster workspace, and the only one that pulls tokio and
//! tonic. It speaks the gRPC that TensorFlow 2.21 speaks, in both directions:
//!
//! - [`TaskServer`]: one task of a cluster, like `tf.distribute.Server` for discovery and
//!   remote contexts. Real TensorFlow's `tf.config.experimental_connect_to_cluster` connects to
//!   it and lists its devices; ops placed on it fail at once with `UnimplementedError`.
//! - [`Context`]: `tf.config.experimental_connect_to_cluster` for Rust. It connects to real
//!   `tf.distribute.Server`s or to [`TaskServer`]s, discovers every task's devices, gives each
//!   task only the devices its [`ClusterDeviceFilters`](device_filter::ClusterDeviceFilters)
//!   let it see, keeps the remote contexts alive, updates or resets them on reconnect, and
//!   reports tasks that die or restart ([`Context::subscribe`]).
//! - Running ops on the cluster's devices, with no TensorFlow in this process:
//!   [`Context::execute`] (values back), [`Context::enqueue`] (outputs kept on the worker as
//!   [`RemoteTensor`]s, usable as inputs on any task that may see them), [`Batch`] (several ops
//!   in one round trip), over [`Tensor`] values and [`Op`]s named as TensorFlow's registry
//!   names them. Real TensorFlow workers compute them and enforce the device filters: an op
//!   whose input lives on a device its task was not given fails with TensorFlow's
//!   `unknown device`.
//! - Running TensorFlow functions traced in Python ([`Function`], from the bytes of
//!   `concrete_function.function_def`): registered once per remote context and task, called
//!   with [`Op::function`] through the same `execute`, `enqueue` and [`Batch`].
//! - [`num_accelerators`]: TensorFlow's base `ClusterResolver.num_accelerators`, which asks the
//!   master task, over any resolver.
//!
//! **Who depends on it:** programs that join, inspect or drive a TensorFlow cluster from Rust,
//! and the `tfcluster` CLI. It builds on `cluster-proto` (the messages and stubs),
//! `cluster-spec` (the cluster), `device-filter` (names and the visibility rule) and
//! `cluster-resolver` (any resolver can be a connect target), and serves through `grpc-guard`
//! (the allow list, limits and TLS its server faces the network with).
//!
//! ## Features
//!
//! - `tls`: TLS with client certificates (mTLS) between Rust peers, with rustls and its ring
//!   provider: `TlsConfig`, `TaskServerBuilder::tls`, `ConnectOptions::tls`. Off by
//!   default: TensorFlow speaks plaintext only.
//!
//! It needs a tokio runtime (multi-threaded for real use: every task of a connect is its own
//! tokio task).
//!
//! ## Example
//!
//! ```
//! use cluster_spec::ClusterSpec;
//! use device_filter::ClusterDeviceFilters;
//! use remote_connect::{ConnectOptions, Context, TaskId, TaskServer};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Three tasks on free ports; each could as well be a real `tf.distribute.Server`.
//! let mut servers = Vec::new();
//! for job in ["ps", "worker", "worker"] {
//!     let placeholder = ClusterSpec::from_json(&format!(r#"{{"{job}": ["localhost:0"]}}"#))?;
//!     let server = TaskServer::builder(placeholder, job, 0)
//!         .with_bind("127.0.0.1:0".parse()?)
//!         .start()
//!         .await?;
//!     servers.push(server);
//! }
//! let addr = |i: usize| servers[i].local_addr().to_string();
//! let spec = ClusterSpec::builder()
//!     .job("ps", [addr(0)])
//!     .job("worker", [addr(1), addr(2)])
//!     .build()?;
//!
//! // ParameterServerStrategy's filters: workers see the ps, the ps sees the workers.
//! let filters = ClusterDeviceFilters::parameter_server(&spec);
//! let ctx = Context::new();
//! ctx.connect_to_cluster(spec, ConnectOptions::default().with_cluster_device_filters(filters))
//!     .await?;
//!
//! // This process sees everything; worker 0 was given only the ps and itself.
//! assert_eq!(ctx.list_logical_devices().len(), 4);
//! assert_eq!(
//!     ctx.visible_devices(&TaskId::new("worker", 0))?,
//!     ["/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"]
//! );
//! // ... and on worker 0, worker 1's CPU is an unknown device, as in TensorFlow.
//! let err = servers[1]
//!     .lookup_device(ctx.context_id(), "/job:worker/replica:0/task:1/device:CPU:0")
//!     .unwrap_err();
//! assert_eq!(err.to_string(), "/job:worker/replica:0/task:1/device:CPU:0 unknown device.");
//! ctx.close().await?;
//! # Ok(()) }
//! ```
//!
//! ## Running ops
//!
//! The same code runs in the interop suite against real `tf.distribute.Server`s (a
//! [`TaskServer`] runs no ops: it answers `UNIMPLEMENTED`, reported as [`Error::Op`]):
//!
//! ```no_run
//! use cluster_spec::ClusterSpec;
//! use remote_connect::{ConnectOptions, Context, Op, Tensor};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222", "localhost:2223"]}"#)?;
//! let ctx = Context::new();
//! ctx.connect_to_cluster(spec, ConnectOptions::default()).await?;
//! let w0 = ctx.device("/job:worker/replica:0/task:0/device:CPU:0")?;
//! let w1 = ctx.device("/job:worker/replica:0/task:1/device:CPU:0")?;
//!
//! let a = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
//! // Kept on worker 0; only its shape comes back.
//! let product = ctx.enqueue(&w0, Op::new("MatMul").input(&a).input(&a)).await?;
//! // Worker 1 fetches it from worker 0 itself; the sum comes back.
//! let sum = ctx.execute(&w1, Op::new("AddV2").input(&product[0]).input(&a)).await?;
//! assert_eq!(
//!     sum[0].to_string(),
//!     "tf.Tensor(\n[[ 8. 12.]\n [18. 26.]], shape=(2, 2), dtype=float32)"
//! );
//! // A typo'd op comes back as TensorFlow's NOT_FOUND, and the context stays usable.
//! assert!(ctx.execute(&w1, Op::new("AddV3")).await.is_err());
//! ctx.close().await?;
//! # Ok(()) }
//! ```
//!
//! Type attributes TensorFlow infers from the inputs (`T`) may be left out, as in Python;
//! the lengths and types of list inputs (`N` of `ConcatV2`, `T` of `IdentityN`) are filled in
//! from TensorFlow 2.21's op registry, which also gives each kept output its dtype
//! ([`RemoteTensor::dtype`]). A dropped [`RemoteTensor`] is freed on its task with the next
//! Enqueue sent there; [`RemoteTensor::release`] frees it at once. [`RemoteTensor::fetch`]
//! reads a small tensor with an `Identity`, and one of 1 MiB or more the way TensorFlow's own
//! client copies a tensor off a worker: a `_Send` into the worker's rendezvous, then
//! `WorkerService.RecvTensor` (100 MB in about 75–120 ms on loopback, as fast as Python's
//! `.numpy()`; through `Identity` it took about 310 ms, as TensorFlow's worker copies an
//! `Enqueue` response's tensor before sending it).
//!
//! ## Following a changing cluster
//!
//! [`Context::follow`] takes any stream of cluster specs (a resolver's watch from
//! `cluster_resolver::watch`: a cluster file, Kubernetes pods, a polled resolver; a channel)
//! and applies each new membership with TensorFlow's update path: `CreateContext` on the tasks
//! added, `UpdateContext` on the others, `CloseContext` on those removed. Handles and tensors
//! on unchanged tasks keep working; a change that adds, removes or renames a job resets, as
//! TensorFlow's rule would. Each change is published as a [`FollowEvent`]:
//!
//! ```
//! use cluster_spec::ClusterSpec;
//! use remote_connect::{ConnectOptions, Context, FollowEvent, FollowOptions, TaskServer};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let placeholder = ClusterSpec::from_json(r#"{"worker": ["localhost:0"]}"#)?;
//! let mut addresses = Vec::new();
//! let mut servers = Vec::new();
//! for _ in 0..2 {
//!     let server = TaskServer::builder(placeholder.clone(), "worker", 0)
//!         .with_bind("127.0.0.1:0".parse()?)
//!         .start()
//!         .await?;
//!     addresses.push(server.local_addr().to_string());
//!     servers.push(server);
//! }
//! let one = ClusterSpec::builder().job("worker", &addresses[..1]).build()?;
//! let two = ClusterSpec::builder().job("worker", &addresses).build()?;
//!
//! // Any stream of specs (a resolver's watch); here a channel the program feeds.
//! let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
//! let changes = futures_util::stream::unfold(rx, |mut rx| async move {
//!     rx.recv().await.map(|spec| (Ok::<_, std::io::Error>(spec), rx))
//! });
//! let ctx = Context::new();
//! let follow = ctx.follow(changes, FollowOptions::new(ConnectOptions::default()));
//! let mut events = follow.subscribe();
//! tx.send(one)?;
//! let FollowEvent::Changed(first) = events.recv().await? else { panic!() };
//! assert!(first.reset); // the first connect
//! tx.send(two)?;
//! let FollowEvent::Changed(second) = events.recv().await? else { panic!() };
//! assert_eq!(second.added.len(), 1);
//! assert!(!second.reset); // an update in place: the context id is the same
//! assert_eq!(second.context_id, first.context_id);
//! assert_eq!(ctx.remote_tasks().len(), 2);
//! follow.stop().await;
//! ctx.close().await?;
//! # Ok(()) }
//! ```
//!
//! A change whose new tasks cannot be discovered changes nothing: the context stays on its
//! last good cluster, a [`FollowEvent::Failed`] says why, and the change is tried again after
//! a back-off or at the next change. Dropping the [`Follow`] stops it at once, leaving the
//! context whole (old cluster or new, never a mix). Adding one task to 64 (benchmark
//! `follow/add_one_to_64`) costs one `GetStatus` and `CreateContext` to the new task and a
//! `KeepAlive` and `UpdateContext` to each of the others, far below reconnecting all 65.
//!
//! ## Run a function traced in Python
//!
//! A `tf.function` is a graph TensorFlow's workers run whole: one call runs every op of it on
//! the worker in one round trip. Trace it in Python and write its definition and the library
//! of functions it calls:
//!
//! ```python
//! @tf.function
//! def f(x, y):
//!     return tf.linalg.matmul(x, y) * 0.5
//! concrete = f.get_concrete_function(tf.TensorSpec([2, 2], tf.float32), tf.TensorSpec([2, 2], tf.float32))
//! open("f.fdef", "wb").write(concrete.function_def.SerializeToString())
//! open("f.lib", "wb").write(concrete.graph.as_graph_def().library.SerializeToString())
//! ```
//!
//! then call it from Rust. This needs TensorFlow workers (a [`TaskServer`] runs no ops, so the
//! example is `no_run`); the interop suite runs the same steps on real ones
//! (`interop::functions`), with results equal to Python's calling the same `tf.function`:
//!
//! ```no_run
//! use cluster_spec::ClusterSpec;
//! use remote_connect::{ConnectOptions, Context, Function, Op, Tensor, TaskId};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let f = Function::from_function_def(&std::fs::read("f.fdef")?)?
//!     .with_library(&std::fs::read("f.lib")?)?;
//! // "__inference_f_17(x: float32, y: float32) -> (float32)"
//! println!("{}", f.signature());
//!
//! let spec = ClusterSpec::from_json(r#"{"worker": ["localhost:2222", "localhost:2223"]}"#)?;
//! let ctx = Context::new();
//! ctx.connect_to_cluster(spec, ConnectOptions::default()).await?;
//! let w0 = ctx.device("/job:worker/replica:0/task:0/device:CPU:0")?;
//! // Optional: the first call registers it on its task, once per context.
//! ctx.register_function(&TaskId::new("worker", 0), &f).await?;
//!
//! let a = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
//! let out = ctx.execute(&w0, Op::function(&f).input(&a).input(&a)).await?;
//! assert_eq!(out[0].to_vec::<f32>()?, [3.5, 5.0, 7.5, 11.0]);
//! // Outputs kept on the worker feed later calls there; inputs that do not fit the signature
//! // are refused before anything is sent.
//! let kept = ctx.enqueue(&w0, Op::function(&f).input(&a).input(&a)).await?;
//! let again = ctx.execute(&w0, Op::function(&f).input(&kept[0]).input(&a)).await?;
//! assert!(ctx.execute(&w0, Op::function(&f).input(&a)).await.is_err());
//! # drop(again);
//! ctx.close().await?;
//! # Ok(()) }
//! ```
//!
//! A call is TensorFlow's own: an operation named after the function and marked as one, its
//! inputs values sent along or [`RemoteTensor`]s, its outputs values back or kept on the
//! worker with their dtypes from the signature. Registration sends the function with the
//! library functions it calls in one `RegisterFunctionOp`, once per remote context and task
//! (concurrent first calls share it); a full reconnect forgets it and the next call
//! registers again. TensorFlow's errors come back as for ops: `NOT_FOUND` for a function
//! never registered, `INVALID_ARGUMENT` for an input of the wrong shape or a definition the
//! worker refuses, `unknown device` for an input on a device the worker's filters hide.
//! A 16-op function costs one round trip, like a 16-op [`Batch`], and less work on the
//! worker: 0.6–0.8 ms a call, 1.1–1.3× faster than that batch and 3.5–3.9× faster than
//! Python calling the same `tf.function` on the remote device (release build, 2 shared
//! cores; the workspace's `docs/benchmarks.md`).
//!
//! ## Securing a cluster: TLS and allow lists
//!
//! TensorFlow's gRPC is plaintext and unauthenticated: anyone who reaches a task's port can
//! create contexts and, on a TensorFlow worker, run ops. Two defenses here:
//!
//! - [`TaskServerBuilder::with_access`] with [`Access::with_allow`] takes the client addresses
//!   or networks ([`Network`]: `10.0.0.0/8`, `192.0.2.7`, `2001:db8::/32`) that may connect
//!   (the same [`Access`] every server of the workspace takes); any other peer's connection
//!   is closed as soon as it is accepted, before a byte of TLS or HTTP/2 is read. A plaintext
//!   peer is told why in an HTTP/2 `GOAWAY` (`127.0.0.1 is not in this server's allowed
//!   networks (--allow)`, which a [`Context`] shows as [`TaskError::Closed`]); refusals are
//!   logged at most once per 10 s with their count. It works with TensorFlow clients too.
//! - With the `tls` feature, `TlsConfig` (a certificate chain, its key and a CA, as PEM
//!   text or files, checked when made) turns on TLS 1.3 with client certificates: a server
//!   built with `Access::with_tls(config)` refuses every client whose certificate does not chain to the
//!   CA, and a [`Context`] connecting with `ConnectOptions::tls` dials `https://`, presents its
//!   own certificate, and checks each server's certificate against the CA **and the host of
//!   the task's address**: a task at `localhost:2222` needs `localhost` among its certificate's
//!   subject alternative names, one at `10.0.0.7:2222` the IP address `10.0.0.7`. The
//!   context's own task server is served under the same config. A refusal names the task:
//!   a server refusing our certificate shows as [`TaskError::TlsRefused`] (TLS 1.3 tells the
//!   client only by closing the connection), a server certificate for another name or CA as
//!   [`TaskError::Connect`] whose causes hold rustls's reason (`certificate not valid for name
//!   "10.0.0.7"`, `UnknownIssuer`).
//!
//! TensorFlow cannot speak TLS to its peers. To protect TensorFlow's own traffic, put each
//! task behind a tunnel that terminates mutual TLS beside it: a sidecar such as ghostunnel,
//! stunnel or a service mesh (Istio, Linkerd) listens on the task's advertised port with TLS
//! and forwards to the task's plaintext port bound on `127.0.0.1`, and each client reaches
//! the other tasks through a local tunnel endpoint; the `ClusterSpec` then names the
//! addresses the tunnels listen on.
//!
#![cfg_attr(
    feature = "tls",
    doc = r##"
```
use cluster_spec::ClusterSpec;
use remote_connect::{Access, ConnectOptions, Context, Network, TaskServer, TlsConfig};

# #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
# async fn main() -> Result<(), Box<dyn std::error::Error>> {
# // Test certificates; real ones come from files: TlsConfig::from_files(cert, key, ca).
# let ca = tf_oracle::TestCa::new("cluster CA");
# let (server, client) = (ca.issue(&["localhost"]), ca.issue(&["client"]));
# let (server_cert, server_key, client_cert, client_key, ca_cert) =
#     (server.cert, server.key, client.cert, client.key, ca.cert_pem());
let placeholder = ClusterSpec::from_json(r#"{"worker": ["localhost:0"]}"#)?;
let server = TaskServer::builder(placeholder, "worker", 0)
    .with_bind("127.0.0.1:0".parse()?)
    .with_access(
        Access::default()
            .with_allow(["127.0.0.0/8".parse::<Network>()?])
            .with_tls(TlsConfig::from_pem(server_cert, server_key, ca_cert.clone())?),
    )
    .start()
    .await?;

// Dialled as localhost: the server's certificate names localhost.
let spec = ClusterSpec::builder()
    .job("worker", [format!("localhost:{}", server.local_addr().port())])
    .build()?;
let tls = TlsConfig::from_pem(client_cert, client_key, ca_cert)?;
let ctx = Context::new();
ctx.connect_to_cluster(spec.clone(), ConnectOptions::default().with_tls(tls)).await?;
assert_eq!(server.contexts().len(), 1);
ctx.close().await?;

// A plaintext client (TensorFlow's kind) is refused.
assert!(Context::new().connect_to_cluster(spec, ConnectOptions::default()).await.is_err());
# Ok(()) }
```
"##
)]
//!
//! ## Errors
//!
//! [`Error`] is every failure of the client side, [`ServerError`] of a [`TaskServer`]. An
//! error that wraps one cause says only its own layer and reaches the cause through
//! [`source`](std::error::Error::source), as tonic's errors do: [`TaskError::Connect`] is
//! `cannot connect`, its source tonic's transport error, so an `anyhow` or `eyre` report shows
//! each cause once. [`Chain`](cluster_spec::__private::error_chain::Chain) shows an error and its causes
//! on one line. [`Error::Tasks`] lists every failed task, each with its whole chain:
//!
//! ```text
//! device discovery failed for 1 of 2 tasks:
//!   /job:worker/replica:0/task:1 at w1:2222: cannot connect: transport error: tcp connect error: Connection refused (os error 111)
//! ```
//!
//! A task's gRPC status is its answer, not a cause below the error: [`TaskError::Rpc`] says
//! its code and message (`GetStatus failed: Unavailable: …`) and keeps the `tonic::Status`
//! whole in a field.
//!
//! ## Limits: what one client may hold of a TaskServer
//!
//! A task's port is reachable by whoever can reach the host, and TensorFlow's gRPC server
//! bounds almost nothing a client may make it hold. A [`TaskServer`] bounds each resource,
//! with defaults ([`Limits::default`]) that a TensorFlow client never meets (a connect opens
//! one connection per task, a handful of streams on it, and sends a `CreateContext` of about
//! 8 MB for a 10,000-task cluster of 8 devices) and an attacker always does. Set them with
//! [`TaskServerBuilder::with_limits`] (or `tfcluster serve --max-connections …`). All but the
//! contexts' are the guards of the `grpc-guard` crate, which elastic's rendezvous server
//! serves behind too:
//!
//! | limit ([`Limits`] field) | default | past it | TensorFlow 2.21 |
//! |---|---|---|---|
//! | streams per connection (`max_streams_per_connection`), announced in `SETTINGS_MAX_CONCURRENT_STREAMS` | 256 | the stream is refused (`REFUSED_STREAM`) | no limit |
//! | streams a connection makes the server reset (`max_reset_streams`) | 1,024 | `GOAWAY` (`ENHANCE_YOUR_CALM`), connection closed | gRPC's own |
//! | time for a request to arrive whole, and for a response to be taken by its connection (`message_timeout`) | 60 s | `DEADLINE_EXCEEDED`; a response not taken is cut (its stream reset, what it held freed) | none |
//! | open connections (`max_connections`), and never more than the open-file limit less 64 | 10,000 | the oldest connection that has not started HTTP/2 makes room; else closed at accept, told why in a `GOAWAY` | no limit |
//! | time for a new connection to send HTTP/2's preface and first frame header, or TLS's first bytes (`handshake_timeout`) | 5 s | closed (a waiting connection costs a socket and a small task, not HTTP/2 buffers) | 120 s |
//! | time a connection may stay open with no request in flight (`idle_timeout`) | 10 min | closed; gRPC clients reconnect on their next call | none |
//! | keep-alive pings (`keepalive_interval`, `keepalive_timeout`) | every 60 s, 20 s to answer | a silent peer's connection closed | every 2 h |
//! | memory for requests being received, inflated and decoded, all connections together (`request_memory`) | 128 MiB | `RESOURCE_EXHAUSTED` at once | no limit |
//! | one compressed message, inflated | 64 MiB | `RESOURCE_EXHAUSTED` | 2 GiB |
//! | memory for responses their connections have not taken yet, all connections together (`response_memory`) | 128 MiB | `RESOURCE_EXHAUSTED` instead of the response | no limit |
//! | live contexts (`max_contexts`) and what they hold (`context_memory`) | 10,000 and 128 MiB | the least recently used context without keep-alive makes room; when every context has a keep-alive, `RESOURCE_EXHAUSTED` | no limit |
//! | how long a context without keep-alive may stay unused (`context_idle_limit`) | forever, as TensorFlow | collected | forever |
//!
//! Memory follows what a request makes the server hold, not its length: its bytes as they
//! arrive, its inflated bytes (a compressed message is inflated by the server itself, on
//! tokio's blocking threads, each inflated byte charged as it is made), and what decoding it
//! allocates (a `CreateContext` or `UpdateContext` costs 256 bytes per device record and 8
//! per byte of its `ClusterDef`, counted before it is decoded), so 57 KB of gzip declaring 15
//! million empty device records is refused in milliseconds instead of costing a gigabyte.
//! A context keeps only its device names, copied out of the request. The methods that run
//! operations (`Enqueue`, `StreamingEnqueue`, `WaitQueueDone`, `RunComponentFunction`) are
//! answered `UNIMPLEMENTED` without reading the request. `tfcluster serve` also raises its
//! soft open-file limit to the hard one. Measured against a `tfcluster serve` process (the
//! `attacks` tests of the `tfcluster` crate, debug build): 100,000 partial streams on one
//! connection, 6,000 idle and preface-only connections, 8 concurrent 29 KB gzip requests
//! inflating to 30 MB, 100,000 contexts without keep-alive and 5,000 refused connections each
//! leave the server under 140 MB resident at its peak and back near its idle 20 MB after,
//! while a legitimate connect succeeds during each within 1 s.
//!
//! ## Metrics
//!
//! [`TaskServerMetrics`] ([`TaskServerBuilder::with_metrics`]; `tfcluster serve --metrics
//! ADDR`) counts into metrics of `prometheus_client`, registered into a `Registry` the
//! caller passes. The connections and refusals are `grpc-guard`'s `GuardMetrics`, the
//! rendezvous's mechanism too. No label has unbounded values (no address, context id or
//! error string):
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `tfcluster_taskserver_contexts` | gauge | | eager contexts held (created, less closed, replaced to make room and collected) |
//! | `tfcluster_taskserver_connections` | gauge | | connections held open, admitted or waiting for their first bytes (read at each scrape) |
//! | `tfcluster_taskserver_refusals_total` | counter | `limit`: `not_allowed`, `max_connections`, `handshake_timeout`, `accept_failed`, `request_memory`, `response_memory`, `max_contexts`, `context_memory` | connections and calls refused, by the limit that refused them (the [`Limits`] table above) |
//!
//! ## Performance
//!
//! Measured on a 2-core machine (`benches/connect.rs`, `examples/task_server.rs`;
//! `docs/benchmarks.md` has the tables): connecting to 16 task servers in one
//! process on loopback (discovery and context creation included) takes about 2 ms, within
//! 1.2× of bare tonic dialling and making two small RPCs to each, where TensorFlow's Python
//! client takes 32–95 ms for 16 TensorFlow servers in one process; 64 tasks take about 9 ms,
//! 256 about 52 ms and 1,024 about 310 ms with ParameterServerStrategy filters and 370 ms
//! without, 1.8× and 2.2× bare tonic in the same run. The growth is faster than linear
//! because TensorFlow's protocol gives every task the whole cluster: each `CreateContext`
//! carries the full `ClusterDef` and every device the task may see. So the client encodes the
//! shared `ServerDef` and each device once for all tasks, and a [`TaskServer`] decodes a
//! `CreateContext` lean (from its whole bytes, the cluster checked straight from them, only
//! the device names kept). One task
//! server as its own process serves within a few milliseconds of starting and holds about
//! 8 MB resident (a `tf.distribute.Server`: seconds and ~530 MB). Every connection has
//! `TCP_NODELAY` on both ends; without it each small RPC waits ~40 ms for a delayed ACK.
//!
//! mTLS costs a TLS 1.3 handshake per task (ECDSA P-256 certificates, both sides verified):
//! `benches/connect.rs` (`connect_mtls`) connects to 16 task servers in about 13 ms with mTLS
//! against 3 ms in plaintext in the same run (medians, 2 shared cores), about 0.6 ms more per
//! task with client and servers on the same cores; the channels then stay open, so later RPCs
//! pay only the record encryption.
//!
//! ## Differences from TensorFlow
//!
//! - **Nothing waits forever.** TensorFlow's client waits without limit for a task that is
//!   down (GetStatus with `wait_for_ready`, no deadline). Here every RPC has
//!   [`ConnectOptions::with_rpc_timeout`] and every connect [`ConnectOptions::with_timeout`]; a connect
//!   that fails lists every failed task with its address and cause, and closes the contexts it
//!   had created.
//! - **GPUs are found in-process, off the runtime, with a deadline.** A [`TaskServer`]'s GPUs
//!   (and a [`Context`]'s own, through its local task server) come from
//!   [`cluster_resolver::gpus`]: NVML, loaded at run time (a host without `libnvidia-ml` has
//!   none), `nvidia-smi` only where NVML cannot be loaded, asked on a thread of its own under
//!   a deadline and once per process. TensorFlow initializes CUDA in the process; the
//!   attributes (`memory_limit`, `physical_device_desc`, ids in `CUDA_VISIBLE_DEVICES` order)
//!   are computed as TensorFlow computes them, from the driver's free memory.
//! - **A task reporting a bad device name is an error naming the task**; TensorFlow's client
//!   aborts the whole process (`CHECK` in `NewRemoteDevices`).
//! - **No port race for the local task.** TensorFlow picks a free port for the added
//!   `localhost` job and binds it later; here the local server binds port 0 first (on
//!   `127.0.0.1` unless [`ConnectOptions::with_local_bind`] says otherwise) and the cluster
//!   advertises the port it got, as `localhost:<port>`.
//! - **A reconnect blocks no reader and can be cancelled.** TensorFlow's `set_server_def`
//!   holds the context's lock for the whole reconnect. Here a connect or update builds the new
//!   state aside and swaps it in whole: [`Context::check_alive`], listings and ops keep
//!   answering for the old cluster meanwhile, the old cluster is closed without the lock, and
//!   a dropped connect or update (a `select!`, a timeout) leaves the old cluster or the new
//!   one, never a mix (each async method's "Cancel safety" section says what is left behind).
//!   [`RunningServer::shutdown`] gives requests in flight [`SHUTDOWN_GRACE`], then closes
//!   their connections.
//! - **A failed CreateContext fails the connect.** TensorFlow only logs it and leaves the
//!   context half made; here the created contexts are closed and the error returned.
//! - **A wrong master is found before connecting.** With `make_master_device_default`,
//!   TensorFlow connects and then raises when no task matches the master; here the connect
//!   is refused first. The default device is reported ([`Context::default_device`]) rather
//!   than entered as a device scope.
//! - **Ops go over unary `Enqueue`**, one round trip per [`Batch`] run, and wait for their
//!   results; TensorFlow's Python client streams ops (`StreamingEnqueue`) and runs them
//!   asynchronously until a value is read. A batch that fails reports TensorFlow's status for
//!   the whole Enqueue (TensorFlow does not say which op of a batch failed; the error lists
//!   the ops sent). Ops cannot run on this process's own devices ([`Error::LocalDevice`]):
//!   there is no kernel runtime here.
//! - **Output dtypes come from a table** of TensorFlow 2.21's op registry (checked against
//!   TensorFlow by a test; `cargo xtask op-signatures` regenerates it); a function or custom
//!   op's kept outputs have no known dtype ([`RemoteTensor::dtype`] is `None`) and can be used
//!   on their own task only.
//! - **A context can follow its cluster** ([`Context::follow`]); TensorFlow's users call
//!   `connect_to_cluster` again by hand, and its rule resets the context (every handle dies)
//!   for any change of the cluster. A follower updates in place (TensorFlow's
//!   `update_server_def` path) whenever the jobs and the local task stay, and resets when a
//!   job is added, removed or renamed. An update whose new tasks cannot be discovered
//!   changes nothing, where TensorFlow's `update_server_def` moves the reachable tasks to
//!   the next view and leaves the rest out ([`Context::update_server_def`] keeps
//!   TensorFlow's behaviour). A handle on a removed task answers [`Error::StaleDevice`]
//!   (TensorFlow: an unknown device).
//!   TensorFlow by a test; `cargo xtask op-signatures` regenerates it), and a function's from
//!   its signature; a custom op's kept outputs (or a function's called by name with
//!   [`Op::new`]) have no known dtype ([`RemoteTensor::dtype`] is `None`) and can be used on
//!   their own task only.
//! - **Functions are registered apart and kept.** TensorFlow's client registers a function
//!   and each function it calls as separate queue items on its stream, and removes them when
//!   the Python function object goes away. Here the first call (or
//!   [`Context::register_function`]) sends one `RegisterFunctionOp` carrying the library in
//!   its own Enqueue (one more round trip, once), and a registration lasts as long as the
//!   remote context. A call carries no attributes, where TensorFlow's client sends its
//!   `config_proto` and `executor_type`: the worker then uses its defaults. A call whose
//!   inputs do not fit the signature is refused before sending ([`FunctionError`]), as
//!   Python's `ConcreteFunction` refuses it.
//! - **Dead and restarted tasks are reported**, through [`Context::subscribe`] and
//!   [`Context::check_alive`]; TensorFlow's keep-alive ignores every answer.
//! - **Incarnations are per server**: each [`TaskServer`] draws its devices' incarnations when
//!   it starts, so a server restarted inside one process is seen as restarted (TensorFlow draws
//!   them once per process, where one process holds one server).
//! - **TLS and allow lists** ([Securing a cluster](#securing-a-cluster-tls-and-allow-lists)):
//!   TensorFlow has neither; plaintext stays the default so that TensorFlow peers can
//!   connect, and TensorFlow's own traffic can be put behind a TLS tunnel.
//! - **The server checks the cluster clients send**: its addresses and job names must be
//!   valid (TensorFlow's worker accepts more and fails later). The device names a context is
//!   given are kept as sent and parsed only when looked up.
//! - **A TaskServer bounds what clients may hold** ([Limits](#limits-what-one-client-may-hold-of-a-taskserver)):
//!   streams, connections, handshake and idle time, request memory (a compressed request
//!   inflates to 64 MiB at most; TensorFlow's gRPC to its 2 GiB message limit, so about 2 MB
//!   sent could make a worker hold 2 GiB), contexts. Requests sent plain keep TensorFlow's
//!   2 GiB message limit. One behaviour differs under pressure only: when 10,000 contexts
//!   (or 128 MiB of them) are live, a new context takes the place of the least recently
//!   used one created without keep-alive, which TensorFlow would keep until it is closed.
//!
//! Kept as TensorFlow does: a connect updates the context in place only when the local job
//! and task are the same and the `ClusterDef` compares equal as a protobuf, job order
//! included (so passing back the spec the context reports, with the added `localhost` job,
//! resets unless that job sorts last; checked against TensorFlow's own protos); device
//! filters are only read on a full connect (an update warns
//! and ignores new ones), and a task keeps the first filters it was ever given (TensorFlow's
//! `SetRemoteDeviceFilters` never replaces a task's filters; checked against TensorFlow's own
//! client in the interop tests); the master's own device list is unfiltered and names this
//! process's devices `/device:TYPE:ID`, as TensorFlow's `list_logical_devices` does; closing an unknown or
//! stale context is OK; `clear_existing_contexts` drops every context of the server first;
//! an unknown context is `ABORTED` with TensorFlow's message; contexts
//! idle past their `keep_alive_secs` are collected once a second.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod accelerators;
mod client;
pub mod devices;
mod error;
mod function;
mod ids;
mod op;
mod server;
mod tensor;

pub use accelerators::num_accelerators;
pub use client::{
    Batch, ClusterChange, ConnectOptions, ConnectTarget, Context, DeviceHandle, Follow,
    FollowEvent, FollowOptions, LogicalDevice, Outputs, Pending, RemoteTensor, TaskEvent,
    TaskHealth,
};
pub use cluster_spec::TaskId;
pub use devices::LocalDevice;
pub use error::{Error, OpFailure, Stage, Staleness, TaskError, TaskFailure};
pub use function::{Arg, Function, FunctionError, Signature};
pub use grpc_guard::Access;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use grpc_guard::{TlsConfig, TlsError};
pub use op::{Attr, Input, Op};
pub use server::{
    ContextInfo, InvalidNetwork, Limits, Network, RunningServer, SHUTDOWN_GRACE, ServerError,
    TaskServer, TaskServerBuilder, TaskServerMetrics,
};
pub use tensor::{Element, Tensor, TensorError};
/// The tonic this crate's API uses ([`OpFailure::status`] is a `tonic::Status`).
pub use tonic;
