//! Issue 13: no error message grows with its input. Every message that shows a device name, a
//! filter, a job name, a device type or digits, fed a 1 MB value, stays under 512 bytes and
//! still shows where the problem is.

use cluster_proto::{JobDeviceFilters, TaskDeviceFilters};
use device_filter::{ClusterDeviceFilters, DeviceName, Error};
use tf_oracle::assert_bounded;

/// The size of the values fed in.
const BIG: usize = 1 << 20;

/// A valid job name of `BIG` bytes whose first bytes are recognizable.
fn big_job(start: &str) -> String {
    format!("{start}{}", "j".repeat(BIG))
}

#[test]
fn messages_stay_short_whatever_the_input() {
    let job = big_job("jobstart");
    let a = "a".repeat(BIG / 2);
    let b = "b".repeat(BIG / 2);

    // InvalidDeviceName, one per reason that quotes the input.
    let cases = [
        (format!("/job:{a}-bad-{b}"), "aaa-bad-bbb"),
        (format!("/job:x/bogusstart{a}"), "/bogusstart"),
        (format!("/task:3xstart{a}"), "xstart"),
        (format!("/task:{}", "9".repeat(BIG)), "/task:999"),
        (format!("/job:x/device:{a}-bad-{b}"), "aaa-bad-bbb"),
    ];
    for (name, needle) in &cases {
        let err = name.parse::<DeviceName>().unwrap_err();
        assert!(matches!(err, Error::InvalidDeviceName { .. }), "{err:?}");
        assert_bounded(&err, &[needle]);
    }

    // InvalidFilter: a long job, then a long filter.
    let mut filters = ClusterDeviceFilters::new();
    let err = filters.set_device_filters(&job, 0, ["/job:-"]).unwrap_err();
    assert!(matches!(err, Error::InvalidFilter { .. }), "{err:?}");
    assert_bounded(&err, &["/job:\"jobstart", "\"/job:-\""]);
    let filter = format!("/task:{}", "9".repeat(BIG));
    let err = filters
        .set_device_filters("w", 0, [filter.as_str()])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidFilter { .. }), "{err:?}");
    assert_bounded(&err, &["/task:999"]);

    // InvalidJobName and InvalidDeviceType: the window is around the offending byte.
    let bad = format!("{a}-bad-{b}");
    let err = filters.set_device_filters(&bad, 0, ["/cpu:0"]).unwrap_err();
    assert!(matches!(err, Error::InvalidJobName { .. }), "{err:?}");
    assert_bounded(&err, &["aaa-bad-bbb"]);
    let err = DeviceName::new().with_device_type(&bad).unwrap_err();
    assert!(matches!(err, Error::InvalidDeviceType { .. }), "{err:?}");
    assert_bounded(&err, &["aaa-bad-bbb"]);

    // TaskIndexOutOfRange.
    let err = filters
        .set_device_filters(&job, u32::MAX, ["/cpu:0"])
        .unwrap_err();
    assert!(matches!(err, Error::TaskIndexOutOfRange { .. }), "{err:?}");
    assert_bounded(&err, &["\"jobstart"]);

    // IncompatibleMerge: two long canonical names.
    let first = DeviceName::for_task(&job, 0).unwrap();
    let second = DeviceName::for_task(&big_job("otherstart"), 0).unwrap();
    let err = first.merge(&second).unwrap_err();
    assert!(matches!(err, Error::IncompatibleMerge { .. }), "{err:?}");
    assert_bounded(&err, &["/job:jobstart", "/job:otherstart"]);

    // DuplicateJob, from the proto.
    let entry = JobDeviceFilters {
        name: job.clone(),
        tasks: [(
            0,
            TaskDeviceFilters {
                device_filters: vec!["/cpu:0".into()],
            },
        )]
        .into(),
    };
    let proto = cluster_proto::ClusterDeviceFilters {
        jobs: vec![entry.clone(), entry],
    };
    let err = ClusterDeviceFilters::try_from(proto).unwrap_err();
    assert!(matches!(err, Error::DuplicateJob { .. }), "{err:?}");
    assert_bounded(&err, &["\"jobstart"]);
}
