#![no_main]
//! `TfConfigClusterResolver::cluster_spec` with `TF_CONFIG` set to the input.

use cluster_resolver::{ClusterResolver, Env, TfConfigClusterResolver};
use libfuzzer_sys::fuzz_target;
use tfcluster_fuzz::block_on;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let resolver = TfConfigClusterResolver::new(Env::from_iter([("TF_CONFIG", s)]));
        let _ = block_on(resolver.cluster_spec());
    }
});
