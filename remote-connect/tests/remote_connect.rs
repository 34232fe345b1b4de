//! Integration tests of `remote-connect`: the TaskServer's TensorFlow semantics, connects to
//! in-process servers on loopback (large clusters, dead, refusing, silent, killed and
//! restarted tasks), the update/reset decision, and interop with real TensorFlow 2.21
//! (`interop`: python found through `TFCLUSTER_PYTHON`, default
//! `<workspace>/target/tf-venv/bin/python`; it fails, never skips, when TensorFlow cannot run).

// Counts each thread's heap, for the tests that bound a call's memory.
#[global_allocator]
static METER: memory_meter::Meter = memory_meter::Meter;

#[path = "remote_connect/cluster.rs"]
mod cluster;
#[path = "remote_connect/faults.rs"]
mod faults;
#[path = "remote_connect/interop.rs"]
mod interop;
#[path = "remote_connect/server.rs"]
mod server;
#[path = "remote_connect/tensor.rs"]
mod tensor;
