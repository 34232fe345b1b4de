//! Slurm's hostlists and tasks-per-node lists.

use cluster_resolver::hostlist::{self, HostList};

/// Slurm hostlists: `HostList::parse` on everything (stated factor: 22 bytes per input byte),
/// and the eager `hostlist::expand` on lists without ranges (stated factor: 48). A list with
/// ranges expands to up to `MAX_HOSTS` names whatever its length, a bound of the output rather
/// than a factor of the input, so those are walked lazily instead, with a cursor that holds
/// one name at a time.
pub fn hostlist(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(list) = HostList::parse(s) {
            let mut cursor = list.cursor();
            let mut walked = 0usize;
            while cursor.next_name().is_some() && walked < 4096 {
                walked += 1;
            }
        }
        if !s.contains('[') {
            let _ = hostlist::expand(s);
        }
    }
}

/// `hostlist::expand_tasks_per_node` (`SLURM_STEP_TASKS_PER_NODE`, e.g. `2(x3),1`).
pub fn tasks_per_node(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = hostlist::expand_tasks_per_node(s);
    }
}
