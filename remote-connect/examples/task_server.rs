//! One task server in its own process, for measuring start-to-serving time and resident memory
//! against a `tf.distribute.Server`, and as a host's task in the fault tests across network
//! namespaces: `task_server JOB TASK [BIND]` serves task TASK of job JOB on BIND (a free
//! loopback port by default), prints `SERVING <addr> <microseconds since start>` once it
//! accepts connections, then serves until stdin closes.

use std::io::Read;
use std::time::Instant;

use cluster_spec::ClusterSpec;
use remote_connect::TaskServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut args = std::env::args().skip(1);
    let job = args.next().unwrap_or_else(|| "worker".to_owned());
    let task: u32 = args.next().map_or(Ok(0), |t| t.parse())?;
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let spec = ClusterSpec::builder()
        .sparse_job(&job, [(task, "localhost:0")])
        .build()?;
    let server = TaskServer::builder(spec, &job, task)
        .bind(bind.parse()?)
        .start()
        .await?;
    println!(
        "SERVING {} {}",
        server.local_addr(),
        started.elapsed().as_micros()
    );
    // Serve until stdin closes, reading it off the runtime's thread.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    server.shutdown().await?;
    Ok(())
}
