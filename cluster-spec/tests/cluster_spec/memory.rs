//! Issue 13: what a hostile input costs. The JSON reader and the `ClusterDef` decoder, on
//! inputs of a few MB shaped the way that used to cost the most per byte, hold at most the
//! factor their docs state.

use cluster_spec::{ClusterSpec, DECODE_MEMORY_FACTOR, Error, JSON_MEMORY_FACTOR};

/// Allocations of a few hundred bytes that every call may make whatever its input.
const SLACK: usize = 4096;

/// Runs `f` and checks that it held at most `factor` bytes per byte of `input` (plus `SLACK`).
fn assert_peak<R>(what: &str, input: usize, factor: usize, f: impl FnOnce() -> R) -> R {
    let (result, peak) = memory_meter::peak(f);
    eprintln!(
        "{what}: {peak} bytes for {input} bytes ({:.2}x)",
        peak as f64 / input as f64
    );
    assert!(
        peak <= factor * input + SLACK,
        "{what}: {peak} bytes for {input} bytes of input, more than {factor}x"
    );
    result
}

/// `ClusterDef` bytes of `jobs` jobs named `j0`, `j1`, … with one task `h:1` each.
fn one_task_jobs(jobs: usize) -> Vec<u8> {
    let mut spec = ClusterSpec::builder();
    for j in 0..jobs {
        spec = spec.job(&format!("j{j}"), ["h:1"]);
    }
    spec.build().unwrap().encode_cluster_def()
}

#[test]
fn cluster_def_of_empty_jobs_fails_at_the_first() {
    // Issue 13: 100 MB of `0a 00` took 2.4 GB and 5 s before failing on the first empty name.
    let bytes = [0x0a, 0x00].repeat(2_000_000);
    let result = assert_peak("0a 00 …", bytes.len(), 1, || {
        ClusterSpec::decode_cluster_def(&bytes)
    });
    assert!(
        matches!(result, Err(Error::InvalidJobName { ref name, .. }) if name.is_empty()),
        "{result:?}"
    );
}

#[test]
fn cluster_def_decode_holds_at_most_its_stated_factor() {
    let valid = one_task_jobs(200_000);
    let spec = assert_peak("one-task jobs", valid.len(), DECODE_MEMORY_FACTOR, || {
        ClusterSpec::decode_cluster_def(&valid)
    });
    assert_eq!(spec.unwrap().jobs().len(), 200_000);
    // One job of many empty map entries: each is read before the job is validated.
    let mut entries = vec![0x0a];
    let body = [&[0x0a, 0x01, b'w'][..], &[0x12, 0x00].repeat(1_500_000)].concat();
    let mut len = body.len();
    while len >= 0x80 {
        entries.push((len as u8) | 0x80);
        len >>= 7;
    }
    entries.push(len as u8);
    entries.extend(body);
    let result = assert_peak(
        "empty map entries",
        entries.len(),
        DECODE_MEMORY_FACTOR,
        || ClusterSpec::decode_cluster_def(&entries),
    );
    assert!(matches!(result, Err(Error::InvalidAddress { .. })));
}

#[test]
fn json_holds_at_most_its_stated_factor() {
    // Issue 13: millions of one-task jobs peaked at 8x the input.
    let jobs: Vec<String> = (0..300_000)
        .map(|j| format!("\"j{j}\":[\"h:1\"]"))
        .collect();
    let json = format!("{{{}}}", jobs.join(","));
    let spec = assert_peak("one-task jobs", json.len(), JSON_MEMORY_FACTOR, || {
        ClusterSpec::from_json(&json)
    });
    assert_eq!(spec.unwrap().jobs().len(), 300_000);
    // Empty jobs: the most job records per byte.
    let jobs: Vec<String> = (0..300_000).map(|j| format!("\"j{j}\":[]")).collect();
    let json = format!("{{{}}}", jobs.join(","));
    let _ = assert_peak("empty jobs", json.len(), JSON_MEMORY_FACTOR, || {
        ClusterSpec::from_json(&json)
    });
    // One job of many tasks.
    let json = format!("{{\"w\":[{}\"h:1\"]}}", "\"h:1\",".repeat(500_000));
    let _ = assert_peak("one dense job", json.len(), JSON_MEMORY_FACTOR, || {
        ClusterSpec::from_json(&json)
    });
}

#[test]
fn messages_quote_a_window_of_long_values() {
    // Issue 13: a bad address or job name was copied whole into the message.
    let address = format!("{}/x:1", "h".repeat(1_000_000));
    let e = ClusterSpec::builder()
        .job("w", [address.as_str()])
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.len() < 400 && e.contains("(1000004 bytes)"), "{e}");
    let name = format!("{}-", "w".repeat(1_000_000));
    let e = ClusterSpec::builder()
        .job(&name, ["h:1"])
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.len() < 400 && e.contains("at byte 1000000"), "{e}");
}
