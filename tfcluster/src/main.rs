//! `tfcluster`: launch, serve, connect to and inspect TensorFlow clusters.
//!
//! Each command lives in its own module of [`commands`] with its clap arguments; this file
//! declares the command line and dispatches. Exit status: 0 on success, 1 on an error (invalid input, a
//! failed task or network call; `tfcluster: error:` and the message naming the value or task,
//! then its causes), 2 when the command line itself is wrong (clap's usage errors, and flags
//! that contradict each other, e.g. `--rdzv-backend built-in --rdzv etcd://…`); `run` ends
//! with its command's own status, or 128 plus the signal that stopped it.

mod args;
mod commands;
mod failure;
mod identity;
mod input;
mod logs;
mod output;
#[cfg(test)]
mod reference;
mod report;
mod run;
mod runtime;
mod stop_signal;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use cluster_spec::__private::error_chain::Chain;

use failure::Failure;

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
    /// How log records on standard error are written: text, or json (one object a line with
    /// its spans' fields: the job's rdzv_id, the node, the round and rank), for a log
    /// collector. Task output and the commands' own results are not log records.
    #[arg(long, value_enum, default_value = "text", global = true)]
    log_format: logs::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Up(commands::up::Args),
    Serve(commands::serve::Args),
    Connect(commands::connect::Args),
    Spec(commands::spec::Args),
    Resolve(commands::resolve::Args),
    Run(commands::run::Args),
    Rendezvous(commands::rendezvous::Args),
    Status(commands::status::Args),
    Hostlist(commands::hostlist::Args),
    Completions(commands::completions::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let events = match &cli.command {
        Command::Rendezvous(args) if args.serves() => logs::RENDEZVOUS_EVENTS,
        _ => &[],
    };
    logs::init(cli.verbose, cli.log_format, events);
    runtime::raise_open_file_limit();
    // The rendezvous token proves an agent; nothing this process launches (in any mode)
    // needs it, so no task, warm interpreter or health check inherits it.
    launcher::withhold_env(elastic::TOKEN_ENV);
    let result = match cli.command {
        Command::Up(args) => commands::up::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Connect(args) => commands::connect::run(args),
        Command::Spec(args) => commands::spec::run(args),
        Command::Resolve(args) => commands::resolve::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Rendezvous(args) => commands::rendezvous::run(args),
        Command::Status(args) => commands::status::run(args),
        Command::Hostlist(args) => commands::hostlist::run(args),
        Command::Completions(args) => commands::completions::run(args, Cli::command()),
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of the whole command line: every flag, group and requirement named
    /// where it is used exists (the flag groups of `args` name `run`'s `launcher`, and
    /// `--rdzv`, across files).
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// `docs/guide/reference.md` is every command's `--help` as this build prints it: written
    /// again with `TFCLUSTER_WRITE_REFERENCE=1 cargo test -p tfcluster --all-features
    /// reference`, else compared, as `codegen --check` compares generated code.
    #[test]
    fn the_command_reference_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/guide/reference.md");
        let reference = crate::reference::render(super::Cli::command());
        if std::env::var_os("TFCLUSTER_WRITE_REFERENCE").is_some() {
            std::fs::write(path, &reference).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == reference,
            "docs/guide/reference.md is not the --help of this build: write it again with \
             `TFCLUSTER_WRITE_REFERENCE=1 cargo test -p tfcluster --all-features reference`"
        );
    }
}
