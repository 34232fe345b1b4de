#![no_main]
//! `ClusterSpec::from_json` on any UTF-8 input (stated memory factor: 8 bytes per input byte).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = cluster_spec::ClusterSpec::from_json(s);
    }
});
