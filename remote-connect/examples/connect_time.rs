//! Our client's side of `cargo xtask bench-vs-tf`: `connect_time CLUSTER_JSON [RUNS]` connects
//! to the cluster RUNS times (15 by default), each a full connect with a new [`Context`]
//! (discovery and context creation; the close after it is not timed), and prints
//! `{"median_ms": …}`. The servers may be real `tf.distribute.Server`s or `tfcluster serve`s.

use std::time::{Duration, Instant};

use cluster_spec::ClusterSpec;
use remote_connect::{ConnectOptions, Context};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cluster = args
        .next()
        .ok_or("usage: connect_time CLUSTER_JSON [RUNS]")?;
    let runs: usize = args.next().map_or(Ok(15), |r| r.parse())?;
    let spec = ClusterSpec::from_json(&cluster)?;
    let once = || async {
        let ctx = Context::new();
        let start = Instant::now();
        ctx.connect_to_cluster(spec.clone(), ConnectOptions::default())
            .await?;
        let took = start.elapsed();
        ctx.close().await?;
        Ok::<Duration, remote_connect::Error>(took)
    };
    // The first connect pays one-time setup (the runtime's threads); it is not counted.
    once().await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(once().await?);
    }
    times.sort();
    let median = times[times.len() / 2].as_secs_f64() * 1000.0;
    println!("{{\"median_ms\": {median}}}");
    Ok(())
}
