//! The rules' hot paths: a failure's signature from the 8 KiB stderr tail the launcher
//! keeps (a TensorFlow traceback, read once per failure), and a failure's decision (its
//! restart scope, then the crash-loop check).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use failure_policy::{CrashLoop, RestartScope, Signature, Strategy, TaskEnd};

/// About 8 KiB of a TensorFlow worker's stderr: runtime log lines, then a traceback.
fn tail() -> String {
    let mut tail = String::new();
    let mut step = 0;
    while tail.len() < 7_800 {
        tail.push_str(&format!(
            "2026-12-07 20:41:{:02}.{step:06}: I tensorflow/core/common_runtime/executor.cc:1{step}] \
             step {step} loss 0.{step:04} on /job:worker/replica:0/task:1/device:CPU:0\n",
            step % 60
        ));
        step += 1;
    }
    tail.push_str(
        "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n\
         ValueError: Dimensions must be equal, but are 3 and 4 for 'MatMul' with input shapes: [8,3], [4,2].\n",
    );
    tail
}

fn bench(c: &mut Criterion) {
    let tail = tail();
    let end = TaskEnd::Exited(1);
    c.bench_function("signature of an 8 KiB tail", |b| {
        b.iter(|| Signature::of(black_box(&end), black_box(&tail)))
    });
    let signature = Signature::of(&end, &tail);
    let jobs = ["chief", "ps", "worker"];
    c.bench_function(
        "a failure's decision: scope, then the crash-loop check",
        |b| {
            let mut loops = CrashLoop::default();
            b.iter(|| {
                let strategy = Strategy::of_jobs(black_box(jobs));
                let restart = RestartScope::Auto.restart(strategy, black_box("worker"));
                let found = loops.failed(black_box("host-a"), signature.clone(), true);
                (restart, found)
            })
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
