//! The worked examples of tf-semantics §4 and the observations against TensorFlow 2.21 recorded
//! in tf-wire §3 and §5.

use cluster_spec::ClusterSpec;
use device_filter::{ClusterDeviceFilters, DeviceName};

fn names(list: &[&str]) -> Vec<DeviceName> {
    list.iter()
        .map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
        .collect()
}

fn strings(list: &[&DeviceName]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

/// The devices of a cluster with two workers, two ps and a chief.
fn cluster_devices() -> Vec<DeviceName> {
    names(&[
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:GPU:0",
        "/job:worker/replica:0/task:1/device:CPU:0",
        "/job:worker/replica:0/task:1/device:GPU:0",
        "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:ps/replica:0/task:1/device:CPU:0",
        "/job:chief/replica:0/task:0/device:CPU:0",
        "/job:chief/replica:0/task:0/device:GPU:0",
    ])
}

fn visible(filters: &[&str]) -> Vec<String> {
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 0, filters).unwrap();
    let devices = cluster_devices();
    let seen = f.visible_devices("worker", 0, &devices);
    assert_eq!(
        f.index(&devices).visible_devices("worker", 0),
        seen,
        "index and direct rule agree for {filters:?}"
    );
    strings(&seen)
}

#[test]
fn job_filter_shows_that_job_and_the_task_itself() {
    // §4: worker 0 with ['/job:ps'] sees ps 0 and 1 and its own devices, not worker 1 or chief.
    assert_eq!(
        visible(&["/job:ps"]),
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:0/device:GPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:1/device:CPU:0",
        ]
    );
}

#[test]
fn task_filter_adds_that_task() {
    // §4: '/job:worker/task:1' additionally exposes worker 1.
    assert_eq!(
        visible(&["/job:ps", "/job:worker/task:1"]),
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:0/device:GPU:0",
            "/job:worker/replica:0/task:1/device:CPU:0",
            "/job:worker/replica:0/task:1/device:GPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:1/device:CPU:0",
        ]
    );
}

#[test]
fn device_filter_shows_that_device_everywhere_and_nothing_else() {
    // §4: '/device:GPU:0' exposes every GPU:0 of every task (and, as always, the task itself).
    assert_eq!(
        visible(&["/device:GPU:0"]),
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:0/device:GPU:0",
            "/job:worker/replica:0/task:1/device:GPU:0",
            "/job:chief/replica:0/task:0/device:GPU:0",
        ]
    );
}

#[test]
fn missing_parts_are_wildcards() {
    // tf-wire §3: '/job:worker/replica:3' is compatible with names that set no replica, and
    // not with replica 0.
    let f: DeviceName = "/job:worker/replica:3".parse().unwrap();
    assert!(f.is_compatible_with(&"/job:worker/task:1/device:CPU:0".parse().unwrap()));
    assert!(!f.is_compatible_with(&"/job:worker/replica:0/task:1/device:CPU:0".parse().unwrap()));
    // Type compares case-sensitively after legacy normalisation.
    assert_eq!(
        visible(&["/cpu:0"]).len(),
        6,
        "every CPU:0 and the task itself"
    );
    assert_eq!(visible(&["/device:cpu:0"]).len(), 2, "only the task itself");
}

#[test]
fn task_without_filters_sees_everything() {
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 0, ["/job:ps"]).unwrap();
    let devices = cluster_devices();
    assert_eq!(
        f.visible_devices("worker", 1, &devices).len(),
        devices.len()
    );
    assert_eq!(f.visible_devices("chief", 0, &devices).len(), devices.len());
    // An empty list is "no filters".
    f.set_device_filters("worker", 0, [""; 0]).unwrap();
    assert_eq!(
        f.visible_devices("worker", 0, &devices).len(),
        devices.len()
    );
}

#[test]
fn own_address_space_is_replica_zero() {
    // TensorFlow keys the filters with /job:J/replica:0/task:T: a device of the same job and
    // task but another (or no) replica is not "the task itself".
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 0, ["/job:nonexistent"])
        .unwrap();
    let devices = names(&[
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:1/task:0/device:CPU:0",
        "/job:worker/task:0/device:CPU:0",
    ]);
    assert_eq!(
        strings(&f.visible_devices("worker", 0, &devices)),
        ["/job:worker/replica:0/task:0/device:CPU:0"]
    );
}

#[test]
fn observed_against_tensorflow_with_a_local_job() {
    // tf-wire §3: filters worker:0 -> ["/job:localhost"], worker:1 -> ["/job:worker/task:0"];
    // worker 0 received {its CPU, localhost CPU}, worker 1 {worker 0 CPU, its CPU}.
    let devices = names(&[
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/device:CPU:0",
    ]);
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 0, ["/job:localhost"])
        .unwrap();
    f.set_device_filters("worker", 1, ["/job:worker/task:0"])
        .unwrap();
    assert_eq!(
        strings(&f.visible_devices("worker", 0, &devices)),
        [
            "/job:localhost/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:0/device:CPU:0"
        ]
    );
    assert_eq!(
        strings(&f.visible_devices("worker", 1, &devices)),
        [
            "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:1/device:CPU:0"
        ]
    );
}

#[test]
fn observed_against_tensorflow_with_two_workers() {
    // tf-wire §5: worker 0 -> ["/job:worker/task:1"] was sent both CPUs; worker 1 ->
    // ["/job:nonexistent"] only its own.
    let devices = names(&[
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/device:CPU:0",
    ]);
    let mut f = ClusterDeviceFilters::new();
    f.set_device_filters("worker", 0, ["/job:worker/task:1"])
        .unwrap();
    f.set_device_filters("worker", 1, ["/job:nonexistent"])
        .unwrap();
    assert_eq!(f.visible_devices("worker", 0, &devices).len(), 2);
    assert_eq!(
        strings(&f.visible_devices("worker", 1, &devices)),
        ["/job:worker/replica:0/task:1/device:CPU:0"]
    );
}

#[test]
fn parameter_server_preset_in_a_cluster() {
    let spec = ClusterSpec::from_json(
        r#"{"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1", "p:2"], "evaluator": ["e:1"]}"#,
    )
    .unwrap();
    let f = ClusterDeviceFilters::parameter_server(&spec);
    let mut devices = cluster_devices();
    devices.extend(names(&["/job:evaluator/replica:0/task:0/device:CPU:0"]));
    let index = f.index(&devices);
    // Workers see ps, chief and themselves; ps see workers, chief and themselves.
    assert_eq!(
        strings(&index.visible_devices("worker", 1)),
        [
            "/job:worker/replica:0/task:1/device:CPU:0",
            "/job:worker/replica:0/task:1/device:GPU:0",
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:ps/replica:0/task:1/device:CPU:0",
            "/job:chief/replica:0/task:0/device:CPU:0",
            "/job:chief/replica:0/task:0/device:GPU:0",
        ]
    );
    assert_eq!(index.visible_devices("ps", 1).len(), 7);
    assert!(!f.is_visible(
        "ps",
        0,
        &"/job:ps/replica:0/task:1/device:CPU:0".parse().unwrap()
    ));
    // The chief and the evaluator have no filters.
    assert_eq!(index.visible_devices("chief", 0).len(), devices.len());
    assert_eq!(index.visible_devices("evaluator", 0).len(), devices.len());
}
