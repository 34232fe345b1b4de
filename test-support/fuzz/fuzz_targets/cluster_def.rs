#![no_main]
//! `fuzz_targets::cluster_def`: its doc says what it reads.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::cluster_def(data));
