//! Every task's visible devices for parameter-server filters over 1,024 tasks with 8 devices
//! each (8,192 devices), with the job index and with the direct per-task rule; and parsing
//! those 8,192 device names.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use device_filter::{ClusterDeviceFilters, DeviceName};

/// Devices per task: a CPU and seven GPUs.
const DEVICES_PER_TASK: u32 = 8;

/// A cluster of one chief, `workers` workers and `ps` parameter servers: its tasks, its devices
/// and the filters `ParameterServerStrategy` sets.
fn cluster(
    workers: u32,
    ps: u32,
) -> (
    Vec<(&'static str, u32)>,
    Vec<DeviceName>,
    ClusterDeviceFilters,
) {
    let mut tasks = vec![("chief", 0)];
    tasks.extend((0..workers).map(|t| ("worker", t)));
    tasks.extend((0..ps).map(|t| ("ps", t)));
    let mut devices = Vec::new();
    for &(job, task) in &tasks {
        for id in 0..DEVICES_PER_TASK {
            let (ty, id) = if id == 0 { ("CPU", 0) } else { ("GPU", id - 1) };
            devices.push(DeviceName::full(job, 0, task, ty, id).expect("valid name"));
        }
    }
    let mut filters = ClusterDeviceFilters::new();
    for t in 0..workers {
        filters
            .set_device_filters("worker", t, ["/job:ps", "/job:chief"])
            .expect("valid filters");
    }
    for t in 0..ps {
        filters
            .set_device_filters("ps", t, ["/job:worker", "/job:chief"])
            .expect("valid filters");
    }
    (tasks, devices, filters)
}

fn all_tasks(c: &mut Criterion) {
    let mut group = c.benchmark_group("visible_devices_all_1024_tasks");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(20);
    for (label, workers, ps) in [("1007w_16ps", 1007, 16), ("511w_512ps", 511, 512)] {
        let (tasks, devices, filters) = cluster(workers, ps);
        assert_eq!(tasks.len(), 1024);
        group.bench_function(format!("indexed/{label}"), |b| {
            b.iter(|| {
                let index = filters.index(&devices);
                let mut total = 0;
                for &(job, task) in &tasks {
                    total += black_box(index.visible_devices(job, task)).len();
                }
                total
            });
        });
        group.bench_function(format!("direct/{label}"), |b| {
            b.iter(|| {
                let mut total = 0;
                for &(job, task) in &tasks {
                    total += black_box(filters.visible_devices(job, task, &devices)).len();
                }
                total
            });
        });
    }
    group.finish();
}

fn parse_names(c: &mut Criterion) {
    let (_, devices, _) = cluster(1007, 16);
    let texts: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let mut group = c.benchmark_group("parse");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("8192_full_names", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(text.parse::<DeviceName>().expect("valid"));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, all_tasks, parse_names);
criterion_main!(benches);
