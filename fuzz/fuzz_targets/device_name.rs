#![no_main]
//! `DeviceName`'s `FromStr` (`/job:worker/replica:0/task:1/device:GPU:0` and its short forms).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = s.parse::<device_filter::DeviceName>();
    }
});
