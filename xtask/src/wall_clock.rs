//! The wall clock, in nanoseconds since the Unix epoch: what every process of the machine
//! (every network namespace too) shares, and what the benchmarks' marks and log lines carry.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
