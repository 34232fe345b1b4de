//! The 10,000-task cluster of the acceptance figure: 4 jobs × 2,500 addresses like
//! `host1-42.example.com:2042` (about 300 KB of JSON). TensorFlow 2.21 takes 9.4 ms on the
//! development machine for: ClusterSpec(json.loads(doc)), as_cluster_def().SerializeToString(),
//! and one task_address lookup per job. `cargo xtask bench-vs-tf` reruns TF's side.

use std::collections::BTreeMap;
use std::hint::black_box;

use cluster_spec::ClusterSpec;
use criterion::{Criterion, criterion_group, criterion_main};
use prost::Message;

const JOBS: [&str; 4] = ["chief", "evaluator", "ps", "worker"];
const TASKS: u32 = 2_500;

fn document() -> String {
    let jobs: serde_json::Map<String, serde_json::Value> = JOBS
        .iter()
        .enumerate()
        .map(|(j, job)| {
            let addresses = (0..TASKS)
                .map(|t| format!("host{j}-{t}.example.com:{}", 2000 + t % 1000).into())
                .collect();
            (job.to_string(), serde_json::Value::Array(addresses))
        })
        .collect();
    serde_json::to_string(&jobs).expect("serializable")
}

fn lookups(spec: &ClusterSpec) -> usize {
    JOBS.iter()
        .map(|job| spec.task_address(job, TASKS / 2).expect("present").len())
        .sum()
}

fn bench(c: &mut Criterion) {
    let doc = document();
    let mut group = c.benchmark_group("cluster_10k");
    group.bench_function("from_json", |b| {
        b.iter(|| ClusterSpec::from_json(black_box(&doc)).expect("valid"))
    });
    group.bench_function("from_json+encode_cluster_def+lookups", |b| {
        b.iter(|| {
            let spec = ClusterSpec::from_json(black_box(&doc)).expect("valid");
            let bytes = spec.encode_cluster_def();
            (bytes.len(), lookups(&spec))
        })
    });
    group.bench_function("from_json+as_cluster_def.encode_to_vec+lookups", |b| {
        b.iter(|| {
            let spec = ClusterSpec::from_json(black_box(&doc)).expect("valid");
            let bytes = spec.as_cluster_def().encode_to_vec();
            (bytes.len(), lookups(&spec))
        })
    });
    let spec = ClusterSpec::from_json(&doc).expect("valid");
    group.bench_function("encode_cluster_def", |b| {
        b.iter(|| black_box(&spec).encode_cluster_def())
    });
    group.bench_function("as_cluster_def", |b| {
        b.iter(|| black_box(&spec).as_cluster_def())
    });
    group.bench_function("to_json", |b| b.iter(|| black_box(&spec).to_json()));
    group.bench_function("serde_json_borrowed_baseline", |b| {
        b.iter(|| {
            serde_json::from_str::<BTreeMap<&str, Vec<&str>>>(black_box(&doc)).expect("valid")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
