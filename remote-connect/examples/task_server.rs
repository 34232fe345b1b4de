//! Task servers in their own process, for `cargo xtask bench-vs-tf` and the fault tests across
//! network namespaces. Two forms:
//!
//! - `task_server JOB TASK [BIND]` serves task TASK of job JOB on BIND (a free loopback port
//!   by default) and prints `SERVING <addr> <microseconds since start>` once it accepts
//!   connections: start-to-serving time and resident memory against one
//!   `tf.distribute.Server`, and a host's task in the fault tests;
//! - `task_server --tasks N` serves tasks 0..N of job `worker` in this one process, on free
//!   loopback ports, and prints the cluster as JSON (`{"worker": [...]}`): the same shape as
//!   TensorFlow's N `tf.distribute.Server`s in one Python process.
//!
//! Either serves until stdin closes.

use std::io::Read;
use std::time::Instant;

use cluster_spec::ClusterSpec;
use remote_connect::{RunningServer, TaskServer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, count] = args.as_slice()
        && flag == "--tasks"
    {
        // Many servers share the cores the way TensorFlow's in-process servers do.
        let runtime = tokio::runtime::Runtime::new()?;
        return runtime.block_on(many(count.parse()?));
    }
    // One server: a single thread keeps its resident memory what a task costs.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(one(&args, started))
}

async fn one(args: &[String], started: Instant) -> Result<(), Box<dyn std::error::Error>> {
    let job = args.first().map_or("worker", String::as_str);
    let task: u32 = args.get(1).map_or(Ok(0), |t| t.parse())?;
    let bind = args.get(2).map_or("127.0.0.1:0", String::as_str);
    let server = start(job, task, bind).await?;
    println!(
        "SERVING {} {}",
        server.local_addr(),
        started.elapsed().as_micros()
    );
    serve_until_stdin_closes(vec![server]).await
}

async fn many(count: u32) -> Result<(), Box<dyn std::error::Error>> {
    let mut servers = Vec::new();
    for task in 0..count {
        servers.push(start("worker", task, "127.0.0.1:0").await?);
    }
    let addresses: Vec<String> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    println!("{}", serde_json::json!({ "worker": addresses }));
    serve_until_stdin_closes(servers).await
}

/// Task `task` of `job` on `bind`; the cluster it starts with names only itself, and a
/// client's `CreateContext` gives it the real one.
async fn start(
    job: &str,
    task: u32,
    bind: &str,
) -> Result<RunningServer, Box<dyn std::error::Error>> {
    let spec = ClusterSpec::builder()
        .sparse_job(job, [(task, "localhost:0")])
        .build()?;
    Ok(TaskServer::builder(spec, job, task)
        .with_bind(bind.parse()?)
        .start()
        .await?)
}

async fn serve_until_stdin_closes(
    servers: Vec<RunningServer>,
) -> Result<(), Box<dyn std::error::Error>> {
    // Read stdin off the runtime's threads.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    for server in servers {
        server.shutdown().await?;
    }
    Ok(())
}
