#![no_main]
//! `fuzz_targets::cluster_json`: its doc says what it reads.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::cluster_json(data));
