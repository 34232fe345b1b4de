//! Issue 13: no error message grows with its input. Every message that shows a job name, an
//! address or a task index, fed a 1 MB value, stays under 512 bytes and still shows where the
//! problem is.

use cluster_spec::{ClusterSpec, Error};
use tf_oracle::assert_bounded;

/// The size of the values fed in.
const BIG: usize = 1 << 20;

/// A valid job name of `BIG` bytes whose first bytes are recognizable.
fn big_job() -> String {
    let mut job = String::from("jobstart");
    job.push_str(&"j".repeat(BIG - job.len()));
    job
}

#[test]
fn messages_stay_short_whatever_the_input() {
    let job = big_job();

    // InvalidJobName: the window is around the offending byte, not the start of the name.
    let mut bad_name = "a".repeat(BIG / 2);
    bad_name.push_str("-bad-");
    bad_name.push_str(&"b".repeat(BIG / 2));
    let err = ClusterSpec::builder()
        .job(&bad_name, ["h:1"])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidJobName { .. }), "{err:?}");
    assert_bounded(&err, &["aaa-bad-bbb"]);

    // InvalidAddress: a long job and a long address.
    let address = format!("addrstart{}", "x".repeat(BIG));
    let err = ClusterSpec::builder()
        .job(&job, [address.as_str()])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidAddress { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);
    assert_bounded(&err, &["addrstart"]);

    // InvalidTaskIndex: a long job and a long index.
    let json = format!("{{\"{job}\": {{\"{}\": \"h:1\"}}}}", "9".repeat(BIG));
    let err = ClusterSpec::from_json(&json).unwrap_err();
    assert!(matches!(err, Error::InvalidTaskIndex { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);
    let err = ClusterSpec::builder()
        .sparse_job(&job, [(u32::MAX, "h:1")])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidTaskIndex { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);

    // DuplicateJob.
    let err = ClusterSpec::builder()
        .job(&job, ["h:1"])
        .job(&job, ["h:2"])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateJob { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);

    // DuplicateTask: a long job and long addresses.
    let second = format!("secondstart{}:1", "y".repeat(BIG));
    let err = ClusterSpec::builder()
        .sparse_job(&job, [(3, "firststart:1"), (3, second.as_str())])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateTask { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);
    assert_bounded(&err, &["secondstart"]);

    // InvalidTasks.
    let err = ClusterSpec::from_json(&format!("{{\"{job}\": \"h:1\"}}")).unwrap_err();
    assert!(matches!(err, Error::InvalidTasks { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);

    // NoSuchJob, NoSuchTask, TooSparse: lookups in a valid spec with a long job.
    let spec = ClusterSpec::builder()
        .sparse_job(&job, [(1 << 30, "h:1")])
        .build()
        .unwrap();
    let err = spec.task_address(&format!("other{job}"), 0).unwrap_err();
    assert!(matches!(err, Error::NoSuchJob { .. }), "{err:?}");
    assert_bounded(&err, &["otherjobstart"]);
    let err = spec.task_address(&job, 0).unwrap_err();
    assert!(matches!(err, Error::NoSuchTask { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);
    let err = spec.job_tasks(&job).unwrap_err();
    assert!(matches!(err, Error::TooSparse { .. }), "{err:?}");
    assert_bounded(&err, &["jobstart"]);
}

#[test]
fn short_values_keep_tensorflow_wording() {
    let spec = ClusterSpec::builder().job("w", ["h:1"]).build().unwrap();
    assert_eq!(
        spec.task_address("x", 0).unwrap_err().to_string(),
        "No such job in cluster: 'x'"
    );
    assert_eq!(
        spec.task_address("w", 4).unwrap_err().to_string(),
        "No task with index 4 in job 'w'"
    );
}
