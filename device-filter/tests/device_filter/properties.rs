//! Property tests: parsing and display, the matching predicates, the visibility rule, the
//! proto and JSON round trips.

use device_filter::{ClusterDeviceFilters, DeviceName};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use prost::Message;

/// Few distinct values, so that filters and devices often meet.
fn small_name() -> impl Strategy<Value = DeviceName> {
    (
        option::of(select(vec!["worker", "ps", "chief", "a"])),
        option::of(0u32..3),
        option::of(0u32..4),
        option::of(select(vec!["CPU", "GPU", "cpu"])),
        option::of(0u32..3),
    )
        .prop_map(|(job, replica, task, ty, id)| build(job, replica, task, ty, id))
}

/// Any valid name.
fn any_name() -> impl Strategy<Value = DeviceName> {
    let name = "[A-Za-z][A-Za-z0-9_]{0,8}";
    let number = 0u32..=i32::MAX as u32;
    (
        option::of(name),
        option::of(number.clone()),
        option::of(number.clone()),
        option::of(name),
        option::of(number),
    )
        .prop_map(|(job, replica, task, ty, id)| {
            build(job.as_deref(), replica, task, ty.as_deref(), id)
        })
}

fn build(
    job: Option<&str>,
    replica: Option<u32>,
    task: Option<u32>,
    ty: Option<&str>,
    id: Option<u32>,
) -> DeviceName {
    let mut n = DeviceName::new();
    if let Some(job) = job {
        n = n.with_job(job).unwrap();
    }
    if let Some(replica) = replica {
        n = n.with_replica(replica).unwrap();
    }
    if let Some(task) = task {
        n = n.with_task(task).unwrap();
    }
    if let Some(ty) = ty {
        n = n.with_device_type(ty).unwrap();
    }
    if let Some(id) = id {
        n = n.with_id(id).unwrap();
    }
    n
}

/// One component in any of the spellings the grammar accepts.
fn component() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        Just("*".to_owned()),
        (0u32..20).prop_map(|n| n.to_string()),
        (0u32..20).prop_map(|n| format!("0{n}")),
    ];
    let name = prop_oneof![
        Just("*".to_owned()),
        "[A-Za-z][A-Za-z0-9_]{0,5}".prop_map(String::from),
    ];
    prop_oneof![
        name.clone().prop_map(|j| format!("/job:{j}")),
        num.clone().prop_map(|r| format!("/replica:{r}")),
        num.clone().prop_map(|t| format!("/task:{t}")),
        name.clone().prop_map(|ty| format!("/device:{ty}")),
        (name, num.clone()).prop_map(|(ty, id)| format!("/device:{ty}:{id}")),
        (select(vec!["cpu", "CPU", "gpu", "GPU"]), num).prop_map(|(p, id)| format!("/{p}:{id}")),
    ]
}

/// A name as a user might write it: components in any order, repeats, legacy forms.
fn written_name() -> impl Strategy<Value = String> {
    vec(component(), 0..6).prop_map(|parts| parts.concat())
}

fn filters() -> impl Strategy<Value = ClusterDeviceFilters> {
    let filter = prop_oneof![small_name().prop_map(|n| n.to_string()), written_name(),];
    vec(
        (
            select(vec!["worker", "ps", "chief", "evaluator"]),
            0u32..5,
            vec(filter, 0..4),
        ),
        0..8,
    )
    .prop_map(|calls| {
        let mut f = ClusterDeviceFilters::new();
        for (job, task, list) in calls {
            f.set_device_filters(job, task, list).unwrap();
        }
        f
    })
}

/// A device on task `task` of `job` as TensorFlow names it (replica 0).
fn own_device(job: &str, task: u32, ty: &str, id: u32) -> DeviceName {
    DeviceName::full(job, 0, task, ty, id).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_of_display_is_identity(name in any_name()) {
        let text = name.to_string();
        prop_assert_eq!(text.parse::<DeviceName>().unwrap(), name);
    }

    #[test]
    fn written_names_parse_and_display_canonically(text in written_name()) {
        let name: DeviceName = text.parse().unwrap();
        let canonical = name.to_string();
        let again: DeviceName = canonical.parse().unwrap();
        prop_assert_eq!(&again, &name);
        prop_assert_eq!(again.to_string(), canonical);
    }

    #[test]
    fn parsing_never_panics_and_accepted_text_round_trips(text in ".{0,40}") {
        if let Ok(name) = text.parse::<DeviceName>() {
            prop_assert_eq!(name.to_string().parse::<DeviceName>().unwrap(), name);
        }
    }

    #[test]
    fn damaged_names_never_panic(
        text in written_name(),
        at in any::<prop::sample::Index>(),
        insert in prop::char::any(),
    ) {
        let mut chars: Vec<char> = text.chars().collect();
        chars.insert(at.index(chars.len() + 1), insert);
        let damaged: String = chars.into_iter().collect();
        match damaged.parse::<DeviceName>() {
            Ok(name) => prop_assert_eq!(name.to_string().parse::<DeviceName>().unwrap(), name),
            Err(err) => prop_assert!(err.to_string().contains("invalid device name")),
        }
    }

    #[test]
    fn compatibility_is_symmetric_and_reflexive(a in small_name(), b in small_name()) {
        prop_assert_eq!(a.is_compatible_with(&b), b.is_compatible_with(&a));
        prop_assert!(a.is_compatible_with(&a));
        prop_assert_eq!(a.is_same_address_space(&b), b.is_same_address_space(&a));
    }

    #[test]
    fn merge_succeeds_exactly_for_compatible_names(a in small_name(), b in small_name()) {
        match a.merge(&b) {
            Ok(merged) => {
                prop_assert!(a.is_compatible_with(&b));
                prop_assert!(merged.is_specification_of(&a));
                prop_assert!(merged.is_specification_of(&b));
                prop_assert_eq!(&merged, &b.merge(&a).unwrap());
            }
            Err(_) => prop_assert!(!a.is_compatible_with(&b)),
        }
        prop_assert!(a.merge_override(&b).is_specification_of(&b));
        prop_assert!(a.merge_unset(&b).is_specification_of(&a));
    }

    #[test]
    fn a_task_always_sees_its_own_devices(
        f in filters(),
        job in select(vec!["worker", "ps", "chief", "evaluator"]),
        task in 0u32..5,
        ty in select(vec!["CPU", "GPU", "TPU"]),
        id in 0u32..4,
    ) {
        let device = own_device(job, task, ty, id);
        prop_assert!(f.is_visible(job, task, &device));
        let devices = [device];
        prop_assert_eq!(f.index(&devices).visible_devices(job, task).len(), 1);
    }

    #[test]
    fn a_task_without_filters_sees_everything(
        f in filters(),
        devices in vec(small_name(), 0..20),
        task in 0u32..5,
    ) {
        // No call ever names job "x".
        prop_assert_eq!(f.visible_devices("x", task, &devices).len(), devices.len());
        for (job, task, list) in f.iter() {
            prop_assert!(!list.is_empty(), "{}:{} is listed, so it has filters", job, task);
        }
    }

    #[test]
    fn visibility_is_the_rule(
        f in filters(),
        devices in vec(small_name(), 0..30),
        job in select(vec!["worker", "ps", "chief"]),
        task in 0u32..5,
    ) {
        let own = DeviceName::for_task(job, task).unwrap();
        let list = f.filters(job, task);
        for device in &devices {
            let expected = list.is_empty()
                || own.is_same_address_space(device)
                || list.iter().any(|filter| filter.device_name().is_compatible_with(device));
            prop_assert_eq!(f.is_visible(job, task, device), expected, "{}", device);
        }
        let direct = f.visible_devices(job, task, &devices);
        prop_assert_eq!(f.index(&devices).visible_devices(job, task), direct);
    }

    #[test]
    fn proto_round_trips(f in filters()) {
        let bytes = f.to_proto().encode_to_vec();
        let decoded = cluster_proto::ClusterDeviceFilters::decode(&bytes[..]).unwrap();
        prop_assert_eq!(&decoded, &f.to_proto());
        prop_assert_eq!(ClusterDeviceFilters::try_from(decoded).unwrap(), f);
    }

    #[test]
    fn json_round_trips(f in filters()) {
        let json = serde_json::to_string(&f).unwrap();
        prop_assert_eq!(serde_json::from_str::<ClusterDeviceFilters>(&json).unwrap(), f);
    }
}
