//! `tfcluster`: inspect TensorFlow cluster specs, resolve a process's cluster from its
//! environment, and expand Slurm hostlists from the command line.
//!
//! Each subcommand lives in its own module; this file parses the first word and dispatches.
//! Exit status: 0 on success, 1 when the input is invalid (the message says which value and
//! where), 2 when the command line itself is wrong.

mod args;
mod hostlist_cmd;
mod resolve_cmd;
mod spec_cmd;

use std::process::ExitCode;

use args::Failure;

const HELP: &str = "\
tfcluster — inspect TensorFlow clusters

USAGE:
    tfcluster <COMMAND> [OPTIONS] [ARGS]

COMMANDS:
    spec        Validate a cluster spec (TF_CONFIG's \"cluster\" JSON) and print it
    resolve     Find this process's cluster from its environment (TF_CONFIG, Slurm, ...)
    hostlist    Expand or compress Slurm hostlists, as `scontrol show hostnames` does
    help        Print this help, or a command's: tfcluster help spec

Run `tfcluster <COMMAND> --help` for a command's options. Exit status: 0 success,
1 invalid input (the message names the value and where it came from), 2 bad usage.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("help" | "--help" | "-h") => match args.get(1).map(String::as_str) {
            Some("spec") => spec_cmd::run(&["--help".into()]),
            Some("hostlist") => hostlist_cmd::run(&["--help".into()]),
            Some("resolve") => resolve_cmd::run(&["--help".into()]),
            _ => {
                print!("{HELP}");
                Ok(())
            }
        },
        Some("--version" | "-V") => {
            println!("tfcluster {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some("spec") => spec_cmd::run(&args[1..]),
        Some("hostlist") => hostlist_cmd::run(&args[1..]),
        Some("resolve") => resolve_cmd::run(&args[1..]),
        Some(other) => Err(Failure::Usage(format!(
            "unknown command '{other}' (commands: spec, resolve, hostlist, help)"
        ))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(message)) => {
            eprintln!("tfcluster: error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(message)) => {
            eprintln!("tfcluster: {message}\nRun `tfcluster --help` for usage.");
            ExitCode::from(2)
        }
    }
}
