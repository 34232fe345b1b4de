//! Slurm hostlist expansion and compression on 100,000 hosts:
//! `rack00-node[0001-1000],rack01-node[0001-1000],…,rack99-node[0001-1000]`.
//!
//! For comparison, TensorFlow 2.21's `expand_hostlist` on the same list, in the TF venv:
//! `python -m timeit -s "from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver
//! import expand_hostlist; s=','.join('rack%02d-node[0001-1000]' % r for r in range(100))"
//! "expand_hostlist(s)"`.

// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use std::hint::black_box;

use cluster_resolver::hostlist::{HostList, compress, expand};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const HOSTS: u64 = 100_000;

fn big_list() -> String {
    (0..100)
        .map(|r| format!("rack{r:02}-node[0001-1000]"))
        .collect::<Vec<_>>()
        .join(",")
}

fn hostlist(c: &mut Criterion) {
    let list = big_list();
    let hosts = expand(&list).expect("the benchmark list is valid");
    assert_eq!(hosts.len() as u64, HOSTS);

    let mut g = c.benchmark_group("hostlist_100k");
    g.throughput(Throughput::Elements(HOSTS));
    // Includes freeing the 100,000 strings, as a caller that drops the result pays it.
    g.bench_function("expand", |b| b.iter(|| expand(black_box(&list))));
    // The same, freeing outside the measurement: the cost of producing the names.
    g.bench_function("expand_without_drop", |b| {
        b.iter_with_large_drop(|| expand(black_box(&list)))
    });
    // Lazy form: parse and count, no names.
    g.bench_function("parse_and_len", |b| {
        b.iter(|| HostList::parse(black_box(&list)).map(|l| l.len()))
    });
    // Lazy form: parse and look at every name through the cursor, no allocation per host.
    g.bench_function("parse_and_cursor", |b| {
        b.iter(|| {
            let list = HostList::parse(black_box(&list)).expect("valid");
            let mut cursor = list.cursor();
            let mut bytes = 0usize;
            while let Some(name) = cursor.next_name() {
                bytes += black_box(name).len();
            }
            bytes
        })
    });
    g.bench_function("compress", |b| b.iter(|| compress(black_box(&hosts))));
    // The floor for any function returning `Vec<String>`: copying the 100,000 names (same
    // sizes, same allocator calls) without computing them. `expand` minus this is the cost of
    // the hostlist work itself; the rest is malloc/free (and, with glibc, page faults after the
    // heap is trimmed on drop).
    g.bench_function("floor_copy_vec_string", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(hosts.len());
            out.extend(black_box(&hosts).iter().map(|h| h.as_str().to_owned()));
            out
        })
    });
    g.finish();
}

criterion_group!(benches, hostlist);
criterion_main!(benches);
