//! `tfcluster`: launch, serve, connect to and inspect TensorFlow clusters.
//!
//! Each command lives in its own module with its clap arguments; this file declares the
//! command line and dispatches. Exit status: 0 on success, 1 on an error (invalid input, a
//! failed task or network call; `tfcluster: error:` and the message naming the value or task,
//! then its causes), 2 when the command line itself is wrong (clap's usage errors, and flags
//! that contradict each other, e.g. `--rdzv-backend built-in --rdzv etcd://…`); `run` ends
//! with its command's own status, or 128 plus the signal that stopped it.

mod args;
mod child_process;
mod cluster_arg;
mod connect_cmd;
mod connect_follow;
mod hostlist_cmd;
mod identity;
mod limit_args;
mod local_cluster;
mod output;
mod probe;
mod rdzv_args;
mod rdzv_source;
mod rdzv_target;
mod rdzv_tls_args;
mod rendezvous_cmd;
mod report;
mod resolve_cmd;
mod run_cmd;
mod run_local;
mod run_rdzv;
mod serve_cmd;
mod spec_cmd;
mod spec_convert;
mod stop_signal;
mod tls_args;
mod up_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use cluster_spec::error_chain::Chain;

use args::Failure;

/// Launch, serve, connect to and inspect TensorFlow clusters, over the gRPC TensorFlow 2.21
/// speaks.
#[derive(Parser)]
#[command(name = "tfcluster", version, propagate_version = true)]
#[command(
    after_help = "Start here: `tfcluster up` runs a whole cluster in this process, \
connects to it with ParameterServerStrategy's device filters and prints what each task sees.\n\
Exit status: 0 success, 1 an error: invalid input, failed tasks or calls (the message names them), 2 bad usage; \
`run` ends with its command's status.\n\
Logs: -v (info), -vv (debug), or RUST_LOG."
)]
struct Cli {
    /// More log output on standard error from tfcluster's own crates (-v info, -vv debug,
    /// -vvv trace: every RPC with its time); RUST_LOG overrides (e.g. `RUST_LOG=h2=debug`).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Up(up_cmd::Args),
    Serve(serve_cmd::Args),
    Connect(connect_cmd::Args),
    Spec(spec_cmd::Args),
    Resolve(resolve_cmd::Args),
    Run(run_cmd::Args),
    Rendezvous(rendezvous_cmd::Args),
    Hostlist(hostlist_cmd::Args),
    /// Print a shell completion script: `tfcluster completions bash > /etc/bash_completion.d/tfcluster`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Raises the soft limit on open files to the hard one, as servers commonly do: a task server
/// holds a descriptor per client connection, and a connect one per task, and the usual soft
/// limit (1,024) is far below what a large cluster needs (or what the hard limit allows).
fn raise_open_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(error) => tracing::debug!(%error, "could not raise the open-file limit"),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.verbose);
    raise_open_file_limit();
    let result = match cli.command {
        Command::Up(args) => up_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Connect(args) => connect_cmd::run(args),
        Command::Spec(args) => spec_cmd::run(args),
        Command::Resolve(args) => resolve_cmd::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Rendezvous(args) => rendezvous_cmd::run(args),
        Command::Hostlist(args) => hostlist_cmd::run(args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tfcluster", &mut script);
            output::emit_bytes(&script)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { error, code }) => {
            if let Some(error) = error {
                // Exit 1 is an error of ours, 2 a usage error; another status is passed on
                // (a stop by signal), and its message says why without calling it an error.
                let kind = if matches!(code, 1 | 2) { "error: " } else { "" };
                eprintln!("tfcluster: {kind}{}", Chain(error.as_ref()));
            }
            ExitCode::from(code)
        }
    }
}

fn init_logs(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // The dependencies (h2, hyper, tonic) stay at warn: at debug they log every frame.
    let ours = [
        "tfcluster",
        "remote_connect",
        "cluster_resolver",
        "cluster_spec",
        "device_filter",
        "elastic",
    ];
    let default = ours.iter().fold("warn".to_owned(), |mut filter, krate| {
        filter.push_str(&format!(",{krate}={level}"));
        filter
    });
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
