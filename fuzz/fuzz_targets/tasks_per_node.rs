#![no_main]
//! `hostlist::expand_tasks_per_node` (`SLURM_STEP_TASKS_PER_NODE`, e.g. `2(x3),1`).

use cluster_resolver::hostlist;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = hostlist::expand_tasks_per_node(s);
    }
});
