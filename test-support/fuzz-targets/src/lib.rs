//! The bodies of tfcluster's fuzz targets, one plain function per target, for the parsers and
//! decoders a user or a peer can reach.
//!
//! Who depends on it: only `fuzz/` (the cargo-fuzz binaries, nightly, libFuzzer), whose
//! `fuzz_target!`s call these functions, and this crate's `tests/corpus.rs`, which replays
//! every file of `fuzz/corpus/<target>/` through the same function in
//! `cargo test --workspace` on stable, without libFuzzer. Each function returns normally for
//! any input; a panic is the bug.
//!
//! No features. Not published.
//!
//! ```
//! // Any bytes at all: a fuzz target never panics.
//! fuzz_targets::cluster_json(br#"{"worker": ["localhost:2222"]}"#);
//! fuzz_targets::task_server(&[0xff, 0x00]);
//! ```

mod block_on;
mod device;
mod hostlist;
mod resolvers;
mod spec;
mod task_server;
mod tensor_proto;

pub use device::{device_name, filter_json};
pub use hostlist::{hostlist, tasks_per_node};
pub use resolvers::{gpu_list, sm_hosts, tf_config};
pub use spec::{cluster_def, cluster_json};
pub use task_server::task_server;
pub use tensor_proto::tensor_proto;

/// A fuzz target's body: any bytes, no panic.
pub type Target = fn(&[u8]);

/// Every target by the name of its cargo-fuzz binary and corpus directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("cluster_json", cluster_json),
    ("cluster_def", cluster_def),
    ("tf_config", tf_config),
    ("hostlist", hostlist),
    ("tasks_per_node", tasks_per_node),
    ("device_name", device_name),
    ("filter_json", filter_json),
    ("sm_hosts", sm_hosts),
    ("gpu_list", gpu_list),
    ("tensor_proto", tensor_proto),
    ("task_server", task_server),
];
