//! [`Error`]: why a cluster file's `TF_CONFIG` document cannot be read.

use cluster_spec::__private::quote::quote;

/// A cluster file ([`cluster_file::parse`](crate::cluster_file::parse)) that is a `TF_CONFIG`
/// document, but an invalid one. (A bare cluster spec's errors are `cluster-spec`'s own.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The document is not valid JSON, or a key has a value of the wrong type or range.
    #[error(
        "invalid TF_CONFIG document at line {line}, column {column}: {message}: {}",
        quote(.text, *.pos)
    )]
    InvalidDocument {
        /// The file's text.
        text: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in bytes) of the problem.
        column: usize,
        /// Byte offset of the problem in `text`.
        pos: usize,
        /// What is wrong, naming the key and the value found.
        message: String,
    },
}
