#![no_main]
//! `fuzz_targets::gpu_list`: its doc says what it reads.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::gpu_list(data));
