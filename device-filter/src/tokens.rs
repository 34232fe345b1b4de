//! The device-name grammar's names and numbers, checked on their own: job names and device
//! types (`[A-Za-z][A-Za-z0-9_]*`, by cluster-spec's job-name rule) and the largest index.
//! The full-name grammar (`grammar.rs`) and [`DeviceName`](crate::DeviceName)'s setters both
//! use them.

use cluster_spec::job_name::{self, Violation};

use crate::error::ParseErrorKind;

/// The largest replica, task or device id: TensorFlow stores them in an `int`, the same limit
/// as a cluster's task indices (the proto's `int32`).
pub(crate) const MAX_INDEX: u32 = cluster_spec::MAX_TASK_INDEX;

/// A parse failure: where, and why.
pub(crate) type Failure = (usize, ParseErrorKind);

/// Checks a job name against `[A-Za-z][A-Za-z0-9_]*`.
pub(crate) fn check_job_name(job: &str) -> Result<(), ParseErrorKind> {
    check_name(job, "job name")
}

/// Checks a device type against `[A-Za-z][A-Za-z0-9_]*`.
pub(crate) fn check_device_type(ty: &str) -> Result<(), ParseErrorKind> {
    check_name(ty, "device type")
}

fn check_name(text: &str, what: &'static str) -> Result<(), ParseErrorKind> {
    // With no terminators the name runs to the end of `text`.
    name_len(text, 0, what, b"")
        .map(|_| ())
        .map_err(|(_, kind)| kind)
}

/// TensorFlow's `ConsumePrefix`: a letter, then letters, digits and `_` up to the first
/// terminator (or the end), by cluster-spec's job-name rule. Returns the length of the name
/// starting at `pos`.
pub(crate) fn name_len(
    s: &str,
    pos: usize,
    what: &'static str,
    terminators: &[u8],
) -> Result<usize, Failure> {
    job_name::scan(&s[pos..], terminators).map_err(|violation| match violation {
        Violation::Char { at, found } => (pos + at, ParseErrorKind::NameChar { what, found }),
        Violation::Start { found } => (pos, ParseErrorKind::NameStart { what, found }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_and_type_names() {
        assert_eq!(check_job_name("worker_1"), Ok(()));
        assert!(check_job_name("").is_err());
        assert!(check_job_name("1x").is_err());
        assert!(check_job_name("a/b").is_err());
        assert!(check_device_type("a:b").is_err());
        assert_eq!(check_device_type("TPU_SYSTEM"), Ok(()));
    }
}
