//! Writing to standard output: a closed pipe ends the command quietly, any other write error
//! (a full disk) is an error, never a panic as `println!` would give.

use std::io::{ErrorKind, Write};

use crate::failure::Failure;

/// Writes `text` to standard output and flushes it.
pub(crate) fn emit(text: &str) -> Result<(), Failure> {
    emit_bytes(text.as_bytes())
}

/// Writes `bytes` (binary output such as a serialized ClusterDef) and flushes them.
pub(crate) fn emit_bytes(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            ErrorKind::BrokenPipe => Failure::code(0),
            _ => anyhow::Error::new(e)
                .context("cannot write to standard output")
                .into(),
        })
}
