//! Integration tests of `remote-connect`: the TaskServer's TensorFlow semantics, connects to
//! in-process servers on loopback (large clusters, dead, refusing, silent, killed and
//! restarted tasks), faults across real hosts made of network namespaces (`across_hosts`,
//! needs root), hostile and heavy traffic (`load`), TLS with client certificates (feature
//! `tls`) and allow lists, tensors against TensorFlow's own encodings and print form
//! (`tensor`), the connect settings the rest leave at their defaults (`options`), the update/reset decision, following a changing cluster (`follow`), cancel safety of connects and updates (`cancel`), and interop with real TensorFlow 2.21
//! (`interop`: python found through `TFCLUSTER_PYTHON`, default
//! `<workspace>/target/tf-venv/bin/python`; it fails, never skips, when TensorFlow cannot run).

// Counts each thread's heap, for the tests that bound a call's memory.
#[global_allocator]
static METER: memory_meter::Meter = memory_meter::Meter;

#[path = "remote_connect/across_hosts.rs"]
mod across_hosts;
#[path = "remote_connect/allow.rs"]
mod allow;
#[path = "remote_connect/cancel.rs"]
mod cancel;
#[path = "remote_connect/cluster.rs"]
mod cluster;
#[path = "remote_connect/faults.rs"]
mod faults;
#[path = "remote_connect/follow.rs"]
mod follow;
#[path = "remote_connect/hosts.rs"]
mod hosts;
#[path = "remote_connect/interop.rs"]
mod interop;
#[path = "remote_connect/limits.rs"]
mod limits;
#[path = "remote_connect/load.rs"]
mod load;
#[path = "remote_connect/metrics.rs"]
mod metrics;
#[path = "remote_connect/options.rs"]
mod options;
#[path = "remote_connect/server.rs"]
mod server;
#[path = "remote_connect/tensor.rs"]
mod tensor;
#[cfg(feature = "tls")]
#[path = "remote_connect/tls.rs"]
mod tls;
