//! `tfcluster spec`: validate a cluster spec and print it in one of TensorFlow's forms, or
//! validate and convert files between the forms TensorFlow writes.

mod convert;

use std::fmt::Write as _;

use anyhow::Context as _;
use cluster_spec::ClusterSpec;

use crate::failure::Failure;
use crate::input::{read_bytes, read_input};
use crate::output::emit;
use convert::Form;

/// Validate a cluster spec (TF_CONFIG's "cluster" JSON) and print it; or `validate` and
/// `convert` files in TensorFlow's forms (JSON, ClusterDef binary, ClusterDef text).
///
/// SPEC maps job names to a list of "host:port" (a dense job) or to an object from task index
/// to "host:port" (a sparse job). Job names must match `[A-Za-z][A-Za-z0-9_]*`, addresses must
/// be host:port.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(after_help = "Examples:\n  \
tfcluster spec '{\"worker\": [\"w0:2222\", \"w1:2222\"], \"ps\": {\"1\": \"p1:2222\"}}'\n  \
tfcluster spec validate cluster.json\n  \
tfcluster spec convert --to cluster-def-text cluster.json\n  \
python -c 'import tensorflow as tf; print(tf.train.ClusterSpec({\"w\": [\"a:1\"]}).as_cluster_def().SerializeToString())' ... | tfcluster spec convert --from cluster-def --to json -")]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The spec: inline JSON, @FILE, or - for standard input.
    #[arg(required = true)]
    spec: Option<String>,
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

/// The form of `validate`'s answer.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Report {
    Table,
    Json,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Check a cluster file; prints `valid: N jobs, M tasks` or the problem (job, task, value).
    Validate {
        /// The file (- for standard input).
        file: String,
        /// Its form (default: detected).
        #[arg(long, value_enum)]
        from: Option<Form>,
        /// table: `valid: N jobs, M tasks`; json: {"valid": true, "jobs": N, "tasks": M}.
        #[arg(long, value_enum, default_value = "table")]
        format: Report,
    },
    /// Convert a cluster file to another form, validating it on the way.
    Convert {
        /// The file (- for standard input).
        file: String,
        /// Its form (default: detected: JSON starts with `{`, text format with `job`,
        /// anything else is binary).
        #[arg(long, value_enum)]
        from: Option<Form>,
        /// The form to write.
        #[arg(long, value_enum)]
        to: Form,
    },
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    match args.command {
        Some(Command::Validate { file, from, format }) => {
            let (bytes, origin) = read_bytes(&file)?;
            let spec = convert::read(&bytes, from, &origin)?;
            let (jobs, tasks) = (spec.jobs().len(), spec.total_tasks());
            emit(&match format {
                Report::Table => format!("valid: {jobs} jobs, {tasks} tasks\n"),
                Report::Json => format!(
                    "{}\n",
                    serde_json::json!({"valid": true, "jobs": jobs, "tasks": tasks})
                ),
            })
        }
        Some(Command::Convert { file, from, to }) => {
            let (bytes, origin) = read_bytes(&file)?;
            let spec = convert::read(&bytes, from, &origin)?;
            convert::write(&spec, to)
        }
        None => print(&args),
    }
}

fn print(args: &Args) -> Result<(), Failure> {
    let (text, origin) = read_input(args.spec.as_deref().unwrap_or("-"))?;
    let spec = ClusterSpec::from_json(&text).context(origin)?;
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
