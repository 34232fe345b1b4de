#![no_main]
//! `SageMakerClusterResolver::cluster_spec` with `SM_HOSTS` set to the input.

use cluster_resolver::{ClusterResolver, Env, SageMakerClusterResolver};
use libfuzzer_sys::fuzz_target;
use tfcluster_fuzz::block_on;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let env = Env::from_iter([("SM_HOSTS", s), ("SM_CURRENT_HOST", "algo-1")]);
        let _ = block_on(SageMakerClusterResolver::new(env).cluster_spec());
    }
});
