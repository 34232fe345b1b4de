//! How long from a cloud setting a notice to the watcher publishing it, and from its
//! withdrawal to the watcher's: GCE's long poll answers the change, so this is one HTTP
//! round trip on loopback and a wake-up, not a poll interval. Against the GCE stand-in
//! (`http-standin`), one flip (`TRUE`, then `FALSE`) per iteration.

use std::time::Duration;

use cloud_notices::{Cloud, NoticeSource, NoticeWatcher, WatchOptions};
use criterion::{Criterion, criterion_group, criterion_main};
use http_standin::GceMetadata;

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (metadata, watcher) = runtime.block_on(async {
        let metadata = GceMetadata::start().await;
        let options = WatchOptions::default().with_var("GCE_METADATA_HOST", metadata.host());
        let watcher = NoticeWatcher::start(NoticeSource::Cloud(Cloud::Gce), &options)
            .expect("a good endpoint")
            .expect("gce is watched");
        metadata.wait_for_requests(4).await;
        (metadata, watcher)
    });
    let mut notices = watcher.notices();
    let mut flip = |value: &'static str, present: bool| {
        metadata.set("instance/preempted", value);
        runtime.block_on(async {
            let seen = notices.wait_for(|n| n.is_some() == present);
            tokio::time::timeout(Duration::from_secs(10), seen)
                .await
                .expect("the notice within 10 s")
                .expect("the watcher runs");
        });
    };
    c.bench_function("GCE notice set, then withdrawn: both seen", |b| {
        b.iter(|| {
            flip("TRUE", true);
            flip("FALSE", false);
        })
    });
    drop(watcher);
    runtime.block_on(metadata.stop());
}

criterion_group!(benches, bench);
criterion_main!(benches);
