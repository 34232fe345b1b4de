//! `tfcluster spec`: validate a cluster spec and print it in one of TensorFlow's forms.

use std::fmt::Write as _;

use cluster_spec::ClusterSpec;

use crate::args::{Failure, read_input};
use crate::output::emit;

/// Validate a cluster spec (TF_CONFIG's "cluster" JSON) and print it.
///
/// SPEC maps job names to a list of "host:port" (a dense job) or to an object from task index
/// to "host:port" (a sparse job). Job names must match `[A-Za-z][A-Za-z0-9_]*`, addresses must
/// be host:port.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  tfcluster spec '{\"worker\": [\"w0:2222\", \"w1:2222\"], \"ps\": {\"1\": \"p1:2222\"}}'"
)]
pub(crate) struct Args {
    /// The spec: inline JSON, @FILE, or - for standard input.
    spec: String,
    /// TensorFlow's repr, jobs sorted by name (the default).
    #[arg(long, group = "format")]
    repr: bool,
    /// TensorFlow's as_dict shape as JSON, jobs in the order given.
    #[arg(long, group = "format")]
    json: bool,
    /// One line per task: JOB TASK ADDRESS.
    #[arg(long, group = "format")]
    tasks: bool,
    /// The ClusterDef protobuf TensorFlow puts on the wire, as hex.
    #[arg(long, group = "format")]
    cluster_def: bool,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let (text, origin) = read_input(&args.spec)?;
    let spec =
        ClusterSpec::from_json(&text).map_err(|e| Failure::Input(format!("{origin}: {e}")))?;
    let out = if args.json {
        format!("{}\n", spec.to_json())
    } else if args.tasks {
        tasks(&spec)
    } else if args.cluster_def {
        hex_line(&spec.encode_cluster_def())
    } else {
        format!("{spec}\n")
    };
    emit(&out)
}

fn tasks(spec: &ClusterSpec) -> String {
    let mut out = String::new();
    for job in spec.jobs() {
        for (index, address) in spec.tasks(job).into_iter().flatten() {
            let _ = writeln!(out, "{job} {index} {address}");
        }
    }
    out
}

/// Lower-case hex of `bytes` and a newline, written into one buffer (not a `String` per byte).
fn hex_line(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2 + 1);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
    out.push(b'\n');
    String::from_utf8(out).unwrap_or_default()
}
