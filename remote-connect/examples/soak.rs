//! The connect/close soak of `cargo xtask soak`: `soak [CYCLES]` starts 4 task servers in this
//! process and connects to them and closes CYCLES times (10,000 by default), each a full
//! connect with a new `Context` (which also starts and stops its own local task server). It
//! prints this process's resident memory at 0, half and all cycles as
//! `{"cycles": N, "seconds": S, "rss_mb": [start, half, end], "contexts_left": 0}`.

use std::time::Instant;

use cluster_spec::ClusterSpec;
use remote_connect::{ConnectOptions, Context, TaskServer};

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cycles: usize = std::env::args().nth(1).map_or(Ok(10_000), |c| c.parse())?;
    let placeholder = ClusterSpec::from_json(r#"{"worker": ["localhost:0"]}"#)?;
    let mut servers = Vec::new();
    for _ in 0..4 {
        servers.push(
            TaskServer::builder(placeholder.clone(), "worker", 0)
                .with_bind("127.0.0.1:0".parse()?)
                .start()
                .await?,
        );
    }
    let spec = ClusterSpec::builder()
        .job("worker", servers.iter().map(|s| s.local_addr().to_string()))
        .build()?;
    let start = Instant::now();
    let mut rss = vec![rss_mb()];
    for cycle in 1..=cycles {
        let ctx = Context::new();
        ctx.connect_to_cluster(spec.clone(), ConnectOptions::default())
            .await?;
        ctx.close().await?;
        if cycle == cycles / 2 || cycle == cycles {
            rss.push(rss_mb());
        }
    }
    let left: usize = servers.iter().map(|s| s.contexts().len()).sum();
    println!(
        "{{\"cycles\": {cycles}, \"seconds\": {:.1}, \"rss_mb\": [{:.1}, {:.1}, {:.1}], \"contexts_left\": {left}}}",
        start.elapsed().as_secs_f64(),
        rss[0],
        rss[1],
        rss[2]
    );
    Ok(())
}
