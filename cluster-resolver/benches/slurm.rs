//! Resolving a 10,000-task Slurm step: 1,250 nodes (`rack[00-49]-node[01-25]`) × 8 tasks, as
//! the last rank sees it, block and cyclic, with and without a jobs map.
//!
//! For comparison, TensorFlow 2.21's resolver on the same step (constructor and one
//! `cluster_spec()`), in the TF venv; TF's hostlist grammar has no two-group names, so the list
//! is spelled out per rack: `SLURM_PROCID=9999 SLURM_STEP_NUM_TASKS=10000
//! SLURM_STEP_TASKS_PER_NODE='8(x1250)' SLURM_STEP_NODELIST=$(python -c "print(','.join(
//! 'rack%02d-node[01-25]' % r for r in range(50)))") python -m timeit -s "from
//! tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import
//! SlurmClusterResolver as R" "R(gpus_per_node=8).cluster_spec()"`.

// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use std::hint::black_box;

use cluster_resolver::{Env, SlurmClusterResolver};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const TASKS: u64 = 10_000;

fn step(distribution: Option<&str>) -> Env {
    let mut vars = vec![
        ("SLURM_PROCID", "9999"),
        ("SLURM_STEP_NUM_TASKS", "10000"),
        ("SLURM_STEP_NODELIST", "rack[00-49]-node[01-25]"),
        ("SLURM_STEP_TASKS_PER_NODE", "8(x1250)"),
        // Block puts the last rank on the last node; cyclic too (every node has 8 tasks).
        ("SLURMD_NODENAME", "rack49-node25"),
    ];
    if let Some(d) = distribution {
        vars.push(("SLURM_DISTRIBUTION", d));
    }
    Env::from_iter(vars)
}

fn slurm(c: &mut Criterion) {
    let block = SlurmClusterResolver::new(step(None)).with_gpus_per_node(8);
    let cyclic = SlurmClusterResolver::new(step(Some("cyclic"))).with_gpus_per_node(8);
    let jobs = SlurmClusterResolver::new(step(None))
        .with_gpus_per_node(8)
        .with_jobs([("chief", 1), ("ps", 99), ("worker", 9900)]);
    for r in [&block, &cyclic, &jobs] {
        let s = r.resolve().expect("the benchmark step resolves");
        assert_eq!(s.spec().total_tasks() as u64, TASKS);
        assert_eq!(s.node(), "rack49-node25");
    }

    let mut g = c.benchmark_group("slurm_resolve_10k_tasks");
    g.throughput(Throughput::Elements(TASKS));
    g.bench_function("block", |b| b.iter(|| black_box(&block).resolve()));
    g.bench_function("cyclic", |b| b.iter(|| black_box(&cyclic).resolve()));
    g.bench_function("block_three_jobs", |b| {
        b.iter(|| black_box(&jobs).resolve())
    });
    g.finish();
}

criterion_group!(benches, slurm);
criterion_main!(benches);
