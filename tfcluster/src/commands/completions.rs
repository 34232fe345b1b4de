//! `tfcluster completions`: the shell completion script of the whole command line.

use crate::failure::Failure;
use crate::output::emit_bytes;

/// Print a shell completion script: `tfcluster completions bash > /etc/bash_completion.d/tfcluster`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The shell.
    shell: clap_complete::Shell,
}

/// Writes the script completing `cli`, the whole command line (`main`'s).
pub(crate) fn run(args: Args, mut cli: clap::Command) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "tfcluster", &mut script);
    emit_bytes(&script)
}
