//! The proto (`ServerDef.cluster_device_filters`) and JSON forms, and their errors.

use std::collections::BTreeMap;

use cluster_proto::{JobDeviceFilters, TaskDeviceFilters};
use device_filter::{ClusterDeviceFilters, DeviceName, Error};

fn task(filters: &[&str]) -> TaskDeviceFilters {
    TaskDeviceFilters {
        device_filters: filters.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn proto_has_tensorflows_shape() {
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 1, ["/job:ps", "/cpu:0"])
        .unwrap();
    f.set_device_filters("worker", 0, ["/job:chief"]).unwrap();
    f.set_device_filters("evaluator", 0, ["/job:x"]).unwrap();
    f.set_device_filters("evaluator", 0, Vec::<&str>::new())
        .unwrap();
    f.set_device_filters("chief", 0, ["/job:ps"]).unwrap();
    let proto = cluster_proto::ClusterDeviceFilters::from(&f);
    assert_eq!(
        proto.jobs,
        [
            JobDeviceFilters {
                name: "chief".into(),
                tasks: [(0, task(&["/job:ps"]))].into(),
            },
            // Listed with no tasks: its only task's list was emptied.
            JobDeviceFilters {
                name: "evaluator".into(),
                tasks: BTreeMap::new(),
            },
            JobDeviceFilters {
                name: "worker".into(),
                // Filters keep the text they were given with.
                tasks: [
                    (0, task(&["/job:chief"])),
                    (1, task(&["/job:ps", "/cpu:0"]))
                ]
                .into(),
            },
        ]
    );
    assert_eq!(ClusterDeviceFilters::try_from(proto).unwrap(), f);
}

#[test]
fn proto_task_with_no_filters_means_none() {
    let proto = cluster_proto::ClusterDeviceFilters {
        jobs: vec![JobDeviceFilters {
            name: "worker".into(),
            tasks: [(0, task(&[])), (1, task(&["/job:ps"]))].into(),
        }],
    };
    let f = ClusterDeviceFilters::try_from(proto).unwrap();
    assert!(f.filters("worker", 0).is_empty());
    assert_eq!(f.iter().count(), 1);
}

#[test]
fn proto_errors_name_the_job_task_and_value() {
    let one = |name: &str, index: i32, filter: &str| cluster_proto::ClusterDeviceFilters {
        jobs: vec![JobDeviceFilters {
            name: name.into(),
            tasks: [(index, task(&[filter]))].into(),
        }],
    };
    let message = |proto: cluster_proto::ClusterDeviceFilters| {
        ClusterDeviceFilters::try_from(proto)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        message(one("worker", -1, "/job:ps")),
        "task index -1 of job \"worker\" is out of range: task indices are 0..=2147483647 (the proto's int32)"
    );
    assert_eq!(
        message(one("worker", 3, "/job:ps/gpu:")),
        "Invalid filter: \"/job:ps/gpu:\" for /job:worker/task:3: expected a number or '*' after \"/gpu:\", found the end of the name (offset 12)"
    );
    assert_eq!(
        message(one("a/replica:3", 0, "/job:ps")),
        "invalid job name \"a/replica:3\": job name may contain only letters, digits and '_', found '/'"
    );
    let mut twice = one("ps", 0, "/job:worker");
    twice.jobs.push(twice.jobs[0].clone());
    assert_eq!(
        message(twice),
        "job \"ps\" appears more than once in the ClusterDeviceFilters proto"
    );
}

#[test]
fn json_file_form() {
    let text = r#"{
        "worker": {"0": ["/job:ps", "/job:chief"], "1": ["/job:ps", "/job:chief"]},
        "ps": {"0": ["/job:worker", "/job:chief"]}
    }"#;
    let f: ClusterDeviceFilters = serde_json::from_str(text).unwrap();
    assert_eq!(f.filters("worker", 1).len(), 2);
    assert_eq!(
        serde_json::to_value(&f).unwrap(),
        serde_json::from_str::<serde_json::Value>(text).unwrap()
    );
}

#[test]
fn json_errors() {
    let err = |text: &str| {
        serde_json::from_str::<ClusterDeviceFilters>(text)
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(r#"{"worker": {"2147483648": ["/job:ps"]}}"#)
            .starts_with("task index 2147483648 of job \"worker\" is out of range")
    );
    assert!(err(r#"{"1x": {"0": ["/job:ps"]}}"#).starts_with("invalid job name \"1x\""));
    assert!(err(r#"{"worker": {"0": ["/job:ps/"]}}"#).starts_with("Invalid filter: \"/job:ps/\""));
    assert!(!err(r#"{"worker": {"-1": ["/job:ps"]}}"#).is_empty());
    assert!(!err(r#"{"worker": {"0": "/job:ps"}}"#).is_empty());
    assert!(!err(r#"{"worker": ["/job:ps"]}"#).is_empty());
}

#[test]
fn device_names_serialize_as_strings() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Placement {
        device: DeviceName,
    }
    let p: Placement = serde_json::from_str(r#"{"device": "/gpu:1/job:w"}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"device":"/job:w/device:GPU:1"}"#
    );
    let err = serde_json::from_str::<Placement>(r#"{"device": "/job:w/"}"#).unwrap_err();
    assert!(err.to_string().contains("trailing '/'"), "{err}");
    assert!(matches!(
        "/job:w/".parse::<DeviceName>(),
        Err(Error::InvalidDeviceName { position: 6, .. })
    ));
}
