//! What a command can fail with, and reading an input that may be inline, a file or stdin.

use std::io::Read;

use anyhow::Context as _;

/// Why a command did not succeed: an error to print, with its causes, and the exit status.
///
/// The shape of cargo's `CliError`: any library error becomes a `Failure` with `?` (exit 1,
/// printed as `tfcluster: error: outer: inner: innermost`), and a call site that knows more
/// adds it as context (`.with_context(|| format!("cannot read {path}"))`), never by writing
/// the cause into a string.
#[derive(Debug)]
pub(crate) struct Failure {
    /// What went wrong; `None` to end quietly (standard output closed, a launched command
    /// that reported for itself).
    pub(crate) error: Option<anyhow::Error>,
    /// The exit status: 1 for an error of ours, 2 for a command line that contradicts
    /// itself, else a status passed on (a launched command's own, which comes with no
    /// error, or 128 plus the signal that stopped a launch).
    pub(crate) code: u8,
}

impl Failure {
    /// Ends with `code`, `error` printed first.
    pub(crate) fn new(error: impl Into<anyhow::Error>, code: u8) -> Self {
        Self {
            error: Some(error.into()),
            code,
        }
    }

    /// A command line clap let through whose flags contradict each other (clap cannot see
    /// that they do): exit status 2, as for clap's own usage errors, `error` printed first.
    pub(crate) fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self::new(error, 2)
    }

    /// Ends with `code` and prints nothing.
    pub(crate) fn code(code: u8) -> Self {
        Self { error: None, code }
    }
}

/// Any error, library or ours (`anyhow!`), is a failure of exit status 1.
impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Self::new(error, 1)
    }
}

/// The text of `arg` and where it came from: `-` reads stdin, `@path` reads a file, anything
/// else is the text itself.
pub(crate) fn read_input(arg: &str) -> Result<(String, String), Failure> {
    if arg == "-" {
        let (bytes, origin) = read_bytes("-")?;
        let text = String::from_utf8(bytes).context("standard input is not UTF-8")?;
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
    match file_arg(arg) {
        Some(path) => read_file(path),
        None => read_input(arg),
    }
}

/// The file [`read_json_or_file`] reads `arg` from (a path, or `@path`); `None` for inline
/// JSON or stdin.
pub(crate) fn file_arg(arg: &str) -> Option<&str> {
    let inline = arg.trim_start().starts_with('{') || arg == "-";
    (!inline).then(|| arg.strip_prefix('@').unwrap_or(arg))
}

/// The bytes of a file, or of standard input for `-`, and where they came from.
pub(crate) fn read_bytes(path: &str) -> Result<(Vec<u8>, String), Failure> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        Ok((bytes, "standard input".into()))
    } else {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
        Ok((bytes, path.to_owned()))
    }
}

fn read_file(path: &str) -> Result<(String, String), Failure> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    Ok((text, path.to_owned()))
}

/// A tokio runtime for one command (two worker threads: enough for loopback clusters).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(Failure::from)
}
