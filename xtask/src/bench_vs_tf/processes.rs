//! The process-level measurements of `bench-vs-tf`: task servers in their own processes
//! (`tfcluster serve`, `tf.distribute.Server`) and clients in theirs (`connect_time`, TensorFlow's
//! Python client).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ms;
use crate::child::{Running, release, rss_mb};
use crate::stats::median;
use crate::table::{Row, Target};

/// How many task servers the connect comparison uses.
const TASKS: usize = 16;

/// Runs `command` and parses the last line it prints as JSON.
pub(super) fn json_line(command: &mut Command) -> Result<Value, String> {
    let shown = format!("{command:?}");
    let output = command
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    match (output.status.success(), last) {
        (true, Some(line)) => {
            serde_json::from_str(line).map_err(|e| format!("{shown}: {e}: {line}"))
        }
        _ => Err(format!(
            "{shown} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

/// Spawns `command` with stdin and stdout piped, and reads its first line.
fn spawn_reading(
    command: &mut Command,
) -> Result<(Running, String, BufReader<ChildStdout>), String> {
    let shown = format!("{command:?}");
    let mut child = command
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .env("CUDA_VISIBLE_DEVICES", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let running = Running(child);
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .map_err(|e| format!("{shown}: {e}"))?;
    if line.is_empty() {
        return Err(format!("{shown} exited before printing"));
    }
    Ok((running, line.trim().to_owned(), stdout))
}

/// A `tfcluster serve` process for task `task` of job worker on a free port, and its address.
fn serve(task: usize) -> Result<(Running, String), String> {
    let cluster = format!(r#"{{"worker": {{"{task}": "localhost:0"}}}}"#);
    let (running, line, _) = spawn_reading(Command::new(release("tfcluster")).args([
        "serve",
        "--cluster",
        &cluster,
        "--job",
        "worker",
        "--task",
        &task.to_string(),
        "--bind",
        "127.0.0.1:0",
    ]))?;
    let address = line
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| format!("no address in {line:?}"))?
        .to_owned();
    Ok((running, address))
}

/// Connect and discover 16 tasks, every combination of client and server; ours also to 16
/// servers in one process, the shape of TensorFlow's side.
pub(super) fn connect_16(python: &Path, tf_side: &str) -> Result<Vec<Row>, String> {
    let tf_client = |cluster: &str| {
        json_line(
            Command::new(python)
                .arg("-c")
                .arg(tf_side)
                .args(["connect", cluster]),
        )
        .and_then(|v| ms(&v, "median_ms"))
    };
    let our_client = |cluster: &str| {
        json_line(Command::new(release("examples/connect_time")).arg(cluster))
            .and_then(|v| ms(&v, "median_ms"))
    };

    let (tf_servers, tf_cluster, _) = spawn_reading(
        Command::new(python)
            .arg("-c")
            .arg(tf_side)
            .args(["servers", &TASKS.to_string()]),
    )?;
    let tf_to_tf = tf_client(&tf_cluster)?;
    let ours_to_tf = our_client(&tf_cluster)?;
    drop(tf_servers);

    // Like TensorFlow's: 16 task servers in one process.
    let (in_one, one_cluster, _) = spawn_reading(
        Command::new(release("examples/task_server")).args(["--tasks", &TASKS.to_string()]),
    )?;
    let ours_to_one = our_client(&one_cluster)?;
    drop(in_one);

    let served = (0..TASKS).map(serve).collect::<Result<Vec<_>, _>>()?;
    let addresses: Vec<&str> = served.iter().map(|(_, a)| a.as_str()).collect();
    let our_cluster = serde_json::json!({ "worker": addresses }).to_string();
    let ours_to_ours = our_client(&our_cluster)?;
    let tf_to_ours = tf_client(&our_cluster)?;
    drop(served);

    Ok(vec![
        Row::new(
            "connect + discover 16 tasks on loopback: our client to 16 task servers in one process (TF: its client to 16 TF servers in one process)",
            tf_to_tf,
            ours_to_one,
            Target::AtLeast(20.0),
        ),
        Row::new(
            "same, our client to 16 `tfcluster serve` processes",
            tf_to_tf,
            ours_to_ours,
            Target::None,
        ),
        Row::new(
            "same, our client to TF servers",
            tf_to_tf,
            ours_to_tf,
            Target::None,
        ),
        Row::new(
            "same, TF's client to `tfcluster serve`s",
            tf_to_tf,
            tf_to_ours,
            Target::None,
        ),
    ])
}

pub(super) struct ServeFigures {
    pub(super) start_ms: f64,
    pub(super) rss_mb: f64,
}

/// `tfcluster serve` as a process: spawn to its `serving` line, and its resident memory
/// half a second later; medians of 3.
pub(super) fn serve_process() -> Result<ServeFigures, String> {
    let mut starts = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let (running, _) = serve(0)?;
        starts.push(start.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(500));
        rss.push(rss_mb(running.0.id())?);
    }
    Ok(ServeFigures {
        start_ms: median(starts),
        rss_mb: median(rss),
    })
}
