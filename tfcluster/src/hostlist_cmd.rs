//! `tfcluster hostlist`: Slurm hostlists expanded and compressed as Slurm does.

use std::fmt::Write as _;

use cluster_resolver::hostlist;

use crate::args::{Failure, read_input};
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
    let invalid = |e: cluster_resolver::Error| Failure::Input(e.to_string());
    match args.command {
        Command::Expand { list } => {
            let hosts = hostlist::HostList::parse(&list).map_err(invalid)?;
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
        Command::Compress { hosts } if hosts.is_empty() => {
            let (text, _) = read_input("-")?;
            emit(&format!(
                "{}\n",
                hostlist::compress(text.split_whitespace())
            ))
        }
        Command::Compress { hosts } => emit(&format!("{}\n", hostlist::compress(&hosts))),
        Command::TasksPerNode { counts } => {
            let counts = hostlist::expand_tasks_per_node(&counts).map_err(invalid)?;
            let mut line = String::new();
            for (i, c) in counts.iter().enumerate() {
                let _ = write!(line, "{}{c}", if i == 0 { "" } else { " " });
            }
            emit(&format!("{line}\n"))
        }
    }
}
