//! What a command can fail with, and reading an input that may be inline, a file or stdin.

use std::io::Read;

/// Why a command did not succeed.
pub(crate) enum Failure {
    /// Bad input or failed tasks (exit 1); the message names the value or task.
    Input(String),
    /// Standard output was closed (`| head`): stop quietly, as Unix tools do.
    ClosedOutput,
    /// End with this exit status: a launched command's own (it reported for itself), or 128
    /// plus the signal that stopped a launch; the message, if any, is printed first.
    Status {
        /// The exit status.
        code: u8,
        /// Why, when the status alone does not say.
        message: Option<String>,
    },
}

/// The text of `arg` and where it came from: `-` reads stdin, `@path` reads a file, anything
/// else is the text itself.
pub(crate) fn read_input(arg: &str) -> Result<(String, String), Failure> {
    if arg == "-" {
        let (bytes, origin) = read_bytes("-")?;
        let text = String::from_utf8(bytes)
            .map_err(|e| Failure::Input(format!("standard input is not UTF-8: {e}")))?;
        Ok((text, origin))
    } else if let Some(path) = arg.strip_prefix('@') {
        read_file(path)
    } else {
        Ok((arg.to_owned(), "the command line".into()))
    }
}

/// JSON given inline (it starts with `{`), from stdin (`-`) or from a file (a path, or
/// `@path`).
pub(crate) fn read_json_or_file(arg: &str) -> Result<(String, String), Failure> {
    if arg.trim_start().starts_with('{') || arg == "-" || arg.starts_with('@') {
        read_input(arg)
    } else {
        read_file(arg)
    }
}

/// The bytes of a file, or of standard input for `-`, and where they came from.
pub(crate) fn read_bytes(path: &str) -> Result<(Vec<u8>, String), Failure> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Input(format!("cannot read standard input: {e}")))?;
        Ok((bytes, "standard input".into()))
    } else {
        let bytes =
            std::fs::read(path).map_err(|e| Failure::Input(format!("cannot read {path}: {e}")))?;
        Ok((bytes, path.to_owned()))
    }
}

fn read_file(path: &str) -> Result<(String, String), Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {path}: {e}")))?;
    Ok((text, path.to_owned()))
}

/// A tokio runtime for one command (two worker threads: enough for loopback clusters).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the async runtime: {e}")))
}
