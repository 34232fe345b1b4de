//! `tfcluster hostlist`: Slurm hostlists expanded and compressed as Slurm does.

use std::fmt::Write as _;

use cluster_resolver::hostlist;

use crate::failure::Failure;
use crate::input::read_input;
use crate::output::emit;

/// Expand or compress Slurm hostlists, as `scontrol show hostnames` / `hostlist` do.
///
/// Zero padding is kept per range endpoint (`n[009-011]` -> n009 n010 n011), brackets may
/// hold lists and ranges (`n[1-3,7]`), and a name may have several bracket groups.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  tfcluster hostlist expand 'rack[1-2]-node[01-03]'")]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Command,
    /// lines: one value per line; json: a JSON array (compress: a JSON string).
    #[arg(long, value_enum, default_value = "lines", global = true)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Lines,
    Json,
}

#[derive(clap::Subcommand)]
enum Command {
    /// One host per line, in Slurm's order.
    Expand {
        /// The hostlist, e.g. `n[01-04],gpu[1,3]`.
        list: String,
    },
    /// One hostlist from host names, order kept (as scontrol).
    Compress {
        /// The host names (default: read from standard input, separated by white space).
        hosts: Vec<String>,
    },
    /// SLURM_STEP_TASKS_PER_NODE's form, e.g. 2(x3),1 -> one count per node.
    TasksPerNode {
        /// The counts.
        counts: String,
    },
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    match args.command {
        Command::Expand { list } if args.format == Format::Json => {
            let hosts = hostlist::expand(&list)?;
            emit(&format!("{}\n", serde_json::json!(hosts)))
        }
        Command::Expand { list } => {
            let hosts = hostlist::HostList::parse(&list)?;
            // Written in chunks, so a list of millions of hosts never sits in memory as text.
            let mut cursor = hosts.cursor();
            let mut chunk = String::with_capacity(1 << 16);
            while let Some(host) = cursor.next_name() {
                chunk.push_str(host);
                chunk.push('\n');
                if chunk.len() >= 1 << 16 {
                    emit(&chunk)?;
                    chunk.clear();
                }
            }
            emit(&chunk)
        }
        Command::Compress { hosts } => {
            let compressed = if hosts.is_empty() {
                let (text, _) = read_input("-")?;
                hostlist::compress(text.split_whitespace())
            } else {
                hostlist::compress(&hosts)
            };
            match args.format {
                Format::Json => emit(&format!("{}\n", serde_json::json!(compressed))),
                Format::Lines => emit(&format!("{compressed}\n")),
            }
        }
        Command::TasksPerNode { counts } => {
            let counts = hostlist::expand_tasks_per_node(&counts)?;
            if args.format == Format::Json {
                return emit(&format!("{}\n", serde_json::json!(counts)));
            }
            let mut line = String::new();
            for (i, c) in counts.iter().enumerate() {
                let _ = write!(line, "{}{c}", if i == 0 { "" } else { " " });
            }
            emit(&format!("{line}\n"))
        }
    }
}
