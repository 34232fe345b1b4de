#![no_main]
//! `fuzz_targets::tasks_per_node`: its doc says what it reads.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::tasks_per_node(data));
