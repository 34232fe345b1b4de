//! What a subcommand can fail with, and reading an input that may be inline, a file or stdin.

use std::io::Read;

/// Why a command failed: bad input (exit 1) or a bad command line (exit 2).
pub(crate) enum Failure {
    Input(String),
    Usage(String),
}

/// The text of `arg`: `-` reads stdin, `@path` reads a file, anything else is the text itself.
pub(crate) fn read_input(arg: &str) -> Result<(String, String), Failure> {
    if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Input(format!("cannot read standard input: {e}")))?;
        Ok((text, "standard input".into()))
    } else if let Some(path) = arg.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Input(format!("cannot read {path}: {e}")))?;
        Ok((text, path.to_owned()))
    } else {
        Ok((arg.to_owned(), "the command line".into()))
    }
}
