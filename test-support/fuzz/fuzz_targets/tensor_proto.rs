#![no_main]
//! `fuzz_targets::tensor_proto`: its doc says what it reads.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::tensor_proto(data));
