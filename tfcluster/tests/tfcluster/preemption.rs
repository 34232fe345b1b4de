//! `run --rdzv --preemption-notices`: a cloud's notice for one host (GCE's metadata server,
//! standing in on loopback) makes that host's agent stop its tasks with SIGTERM (each shows
//! the notice it read from `TFCLUSTER_NOTICE_FILE`, then exits 42 as TensorFlow's handler
//! does after saving) and leave before the deadline; the job forms its next round without
//! it, no restart counted, and ends when its work does.

use std::time::{Duration, Instant};

use http_standin::GceMetadata;
use tokio::runtime::Runtime;

use super::elastic_run::{scratch, serving};
use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Prints `seen RANK ROUND RESTARTS WORKERS`; on SIGTERM prints the notice it can read and
/// exits 42 (a save, then TensorFlow's planned exit); exits 0 once `$DIR/done` exists.
const TASK: &str = r#"
workers=$(echo "$TF_CONFIG" | grep -o '127\.0\.0\.1:[0-9]*' | wc -l)
echo "seen $TFCLUSTER_NODE_RANK $TFCLUSTER_ROUND $TFCLUSTER_RESTART_COUNT $workers"
trap 'echo "saved round=$TFCLUSTER_ROUND notice=$(cat "$TFCLUSTER_NOTICE_FILE" 2>/dev/null)"; exit 42' TERM
while [ ! -e "$DIR/done" ]; do sleep 0.1; done
"#;

/// `(rank, round, restarts, workers)` of an agent's `seen` lines.
fn seen(agent: &Launch) -> Vec<(u32, u64, u32, usize)> {
    agent
        .stdout()
        .lines()
        .filter_map(|line| {
            let rest = line.split_once("] seen ")?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((
                f[0].parse().ok()?,
                f[1].parse().ok()?,
                f[2].parse().ok()?,
                f[3].parse().ok()?,
            ))
        })
        .collect()
}

/// Polls `what` until it gives something, for at most [`TIMEOUT`].
fn until<T>(agents: &[&Launch], what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = found() {
            return found;
        }
        if started.elapsed() > TIMEOUT {
            let output: Vec<String> = agents
                .iter()
                .map(|a| format!("{}{}", a.stdout(), a.stderr()))
                .collect();
            panic!("no {what} within {TIMEOUT:?}:\n{}", output.join("\n----\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_spot_notice_makes_its_host_leave_and_the_job_go_on_without_it() {
    let rt = Runtime::new().expect("a runtime");
    let metadata = rt.block_on(GceMetadata::start());
    let dir = scratch("preemption");
    let dir_text = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let flags = |endpoint: &str, notices: &str| {
        [
            "run",
            "--rdzv",
            endpoint,
            "--nodes",
            "1:2",
            "--rdzv-last-call",
            "1s",
            "--rdzv-timeout",
            "10s",
            "--grace",
            "5s",
            "--preemption-notices",
            notices,
            "--",
            "sh",
            "-c",
            TASK,
        ]
        .map(str::to_owned)
    };
    let (mut a, endpoint) = serving(|endpoint, log| {
        let args = flags(endpoint, "off");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Launch::start(&args, &[("DIR", &dir_text), log])
    });
    let args = flags(&endpoint, "gce");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut b = Launch::start(
        &args,
        &[("DIR", &dir_text), ("GCE_METADATA_HOST", metadata.host())],
    );
    // Both hosts in one round: the last round B's task saw, which A's saw too.
    let round = until(&[&a, &b], "round of both hosts", || {
        let (_, round, _, workers) = *seen(&b).last()?;
        let both = workers == 2 && seen(&a).iter().any(|s| s.1 == round);
        both.then_some(round)
    });

    let noticed = Instant::now();
    metadata.set("instance/preempted", "TRUE");
    let status = b.wait(TIMEOUT);
    let b_err = b.stderr();
    assert_eq!(status.code(), Some(0), "a planned departure: {b_err}");
    assert!(
        b_err.contains(
            "left the job ahead of the cloud's notice: gce preemption (instance/preempted: TRUE)"
        ),
        "{b_err}"
    );
    let b_out = b.stdout();
    let saved = b_out
        .lines()
        .find_map(|l| l.split_once("] saved ").map(|(_, rest)| rest.to_owned()))
        .unwrap_or_else(|| panic!("B's task was told (SIGTERM): {b_out}"));
    assert!(
        saved.starts_with(&format!("round={round} notice={{")),
        "{saved}"
    );
    assert!(
        saved.contains(r#""cloud":"gce""#) && saved.contains(r#""kind":"preemption""#),
        "{saved}"
    );

    // A trains on alone, in a new round, with no restart counted.
    let (rank, next, restarts, workers) = until(&[&a], "round without the noticed host", || {
        seen(&a).into_iter().find(|s| s.1 > round)
    });
    let without = noticed.elapsed();
    assert_eq!(
        (rank, restarts, workers),
        (0, 0, 1),
        "round {next}: {}",
        a.stdout()
    );
    eprintln!("from the notice to a round without its host: {without:?}");

    std::fs::write(dir.path().join("done"), "").expect("written");
    let status = a.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", a.stderr());
    let requests = metadata.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.header("metadata-flavor") == Some("Google"))
    );
    rt.block_on(metadata.stop());
}
