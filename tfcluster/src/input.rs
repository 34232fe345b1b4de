//! Reading a command's input: text inline, from a file (`@path`, or a path where JSON is
//! expected) or from standard input (`-`), with where it came from for the error messages.

use std::io::Read;

use anyhow::Context as _;

use crate::failure::Failure;

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
