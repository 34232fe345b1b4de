#![no_main]
//! `ClusterSpec::decode_cluster_def` on raw bytes (a ClusterDef protobuf; stated factor: 8).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cluster_spec::ClusterSpec::decode_cluster_def(data);
});
