#![no_main]
//! `ClusterDeviceFilters`' JSON form (job → task index → filters).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = serde_json::from_str::<device_filter::ClusterDeviceFilters>(s);
    }
});
