#![no_main]
//! Slurm hostlists: `hostlist::expand` (stated factor: 48) and `HostList::parse` (22).

use cluster_resolver::hostlist::{self, HostList};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = hostlist::expand(s);
        let _ = HostList::parse(s);
    }
});
