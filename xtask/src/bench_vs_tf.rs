//! `cargo xtask bench-vs-tf`: the same work in TensorFlow 2.21 and in tfcluster, one after the
//! other in one run, on this machine; prints a table of medians and ratios (TF / ours) and
//! writes it to its section of `docs/benchmarks.md` with the machine and the command.
//!
//! Ours is measured by the criterion benches (in-process work, their medians read from
//! `target/criterion`) and by release binaries in their own processes (`tfcluster serve`, the
//! `connect_time` and `task_server` examples); TensorFlow's by `tf_side.py` in the TensorFlow venv.

mod processes;

use std::fs;
use std::process::Command;

use serde_json::Value;

use crate::table::{self, Row, Target};
use crate::workspace::target_dir;
use crate::{docs_section, machine, tf_venv, workspace};

/// TensorFlow's side, run with the venv's python.
const TF_SIDE: &str = include_str!("bench_vs_tf/tf_side.py");

/// Criterion's options: short runs, as this command compares rather than tracks.
const CRITERION: &[&str] = &["--warm-up-time", "1", "--measurement-time", "3"];

pub(crate) fn run() -> Result<(), String> {
    let python = tf_venv::ensure()?;
    build()?;
    let tf = |args: &[&str]| -> Result<Value, String> {
        processes::json_line(Command::new(&python).arg("-c").arg(TF_SIDE).args(args))
    };
    let mut rows = Vec::new();

    eprintln!("xtask: 1/5 a 10,000-task cluster spec");
    bench("cluster-spec", "cluster_spec", "cluster_10k")?;
    let tf_spec = ms(&tf(&["spec"])?, "median_ms")?;
    rows.push(Row::new(
        "10,000-task ClusterSpec from JSON, ClusterDef bytes, a lookup per job (recommended: `encode_cluster_def`)",
        tf_spec,
        criterion_ms("cluster_10k", "from_json+encode_cluster_def+lookups")?,
        Target::AtLeast(20.0),
    ));
    rows.push(Row::new(
        "same, through `as_cluster_def().encode_to_vec()`",
        tf_spec,
        criterion_ms(
            "cluster_10k",
            "from_json+as_cluster_def.encode_to_vec+lookups",
        )?,
        Target::None,
    ));

    eprintln!("xtask: 2/5 a 100,000-host hostlist");
    bench(
        "cluster-resolver",
        "hostlist",
        "hostlist_100k/(expand|parse_and_cursor)$",
    )?;
    let tf_hosts = ms(&tf(&["hostlist"])?, "median_ms")?;
    rows.push(Row::new(
        "hostlist of 100,000 hosts, lazy `HostList` walked with a cursor (recommended)",
        tf_hosts,
        criterion_ms("hostlist_100k", "parse_and_cursor")?,
        Target::AtLeast(10.0),
    ));
    rows.push(Row::new(
        "same, eager `expand` to `Vec<String>`",
        tf_hosts,
        criterion_ms("hostlist_100k", "expand")?,
        Target::None,
    ));

    eprintln!("xtask: 3/5 connect and discover 16 tasks");
    rows.extend(processes::connect_16(&python, TF_SIDE)?);

    eprintln!("xtask: 4/5 one task server process");
    let tf_server = tf(&["server-process"])?;
    let ours = processes::serve_process()?;
    rows.push(Row::new(
        "one task server process (`tf.distribute.Server` / `tfcluster serve`): start to serving",
        ms(&tf_server, "start_ms")?,
        ours.start_ms,
        Target::AtLeast(100.0),
    ));
    rows.push(Row::memory(
        "same, resident memory (MB)",
        ms(&tf_server, "rss_mb")?,
        ours.rss_mb,
        Target::AtLeast(50.0),
    ));

    eprintln!("xtask: 5/5 our connect at 16 to 1,024 in-process task servers");
    bench(
        "remote-connect",
        "connect",
        "connect/(no_filters|ps_filters|bare_tonic_floor)/",
    )?;
    for n in [16, 64, 256, 1024] {
        let target = if n == 1024 {
            Target::AtMost(250.0)
        } else {
            Target::None
        };
        rows.push(Row::ours_only(
            &format!(
                "our connect + discovery, {n} in-process task servers, no filters (bare tonic, dial + 2 small RPCs per task: {:.1} ms)",
                criterion_ms("connect", &format!("bare_tonic_floor/{n}"))?
            ),
            criterion_ms("connect", &format!("no_filters/{n}"))?,
            target,
        ));
    }
    rows.push(Row::ours_only(
        "same, 1,024 tasks with ParameterServerStrategy filters",
        criterion_ms("connect", "ps_filters/1024")?,
        Target::None,
    ));

    let machine = format!(
        "{}; TensorFlow 2.21.0 (tensorflow-cpu)",
        machine::describe()
    );
    let report = render(&rows, &machine);
    print!("{report}");
    let path = workspace::root().join("docs/benchmarks.md");
    docs_section::write(&path, "bench-vs-tf", &report)?;
    eprintln!("xtask: wrote its section of {}", path.display());
    Ok(())
}

/// The report: the machine, the command, the table.
fn render(rows: &[Row], machine: &str) -> String {
    format!(
        "## tfcluster beside TensorFlow 2.21\n\n\
         Machine: {machine}.\n\n\
         Command: `cargo xtask bench-vs-tf` (TensorFlow's side in the TensorFlow venv, ours from \
         the criterion benches and release binaries, one after the other in one run). Medians; \
         the ratio is TensorFlow's figure over ours. On a shared or busy machine absolute \
         figures move by up to 2x: compare ratios.\n\n{}",
        table::render("TensorFlow 2.21", "TF / ours", rows)
    )
}

/// The release binaries run as processes.
fn build() -> Result<(), String> {
    workspace::build_release(&[
        "-p",
        "tfcluster",
        "-p",
        "remote-connect",
        "--bin",
        "tfcluster",
        "--example",
        "connect_time",
        "--example",
        "task_server",
    ])
}

/// Runs criterion bench `bench` of `package`, only the benchmarks matching `filter`.
fn bench(package: &str, bench: &str, filter: &str) -> Result<(), String> {
    workspace::run(
        Command::new("cargo")
            .args(["bench", "-p", package, "--bench", bench, "--", filter])
            .args(CRITERION),
    )
}

/// Criterion's median for `group/function`, in milliseconds.
fn criterion_ms(group: &str, function: &str) -> Result<f64, String> {
    let path = target_dir()
        .join("criterion")
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("cannot read criterion's result {}: {e}", path.display()))?;
    let estimates: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    estimates["median"]["point_estimate"]
        .as_f64()
        .map(|ns| ns / 1e6)
        .ok_or_else(|| format!("{}: no median", path.display()))
}

/// Field `key` of a JSON answer as a number.
pub(crate) fn ms(value: &Value, key: &str) -> Result<f64, String> {
    value[key]
        .as_f64()
        .ok_or_else(|| format!("no number {key:?} in {value}"))
}
