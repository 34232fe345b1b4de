//! [`TokenError`]: why a rendezvous token cannot be used, and where it came from — never the
//! token itself.

use std::path::PathBuf;

/// A rendezvous [`Token`](crate::Token) that cannot be read or is not valid, from
/// [`Token::new`](crate::Token::new), [`Token::from_file`](crate::Token::from_file) or
/// [`Token::from_env`](crate::Token::from_env). The message names where the token came from
/// and what is wrong, and never shows the token: `the rendezvous token from file
/// "/etc/job.token" is 9 bytes long; a token is 16 to 1024 bytes of printable ASCII`.
#[derive(Debug, thiserror::Error)]
#[error("the rendezvous token from {origin} {problem}")]
#[non_exhaustive]
pub struct TokenError {
    /// Where the token came from.
    pub origin: TokenOrigin,
    /// What is wrong with it.
    #[source]
    pub problem: TokenProblem,
}

/// Where a token came from; carried by [`TokenError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenOrigin {
    /// A file (`--rdzv-token-file`, `--token-file`).
    File(PathBuf),
    /// An environment variable (`TFCLUSTER_RDZV_TOKEN`).
    Env(&'static str),
    /// A value given in the program.
    Value,
    /// A call's `authorization` metadata, as a rendezvous received it.
    Call,
}

impl std::fmt::Display for TokenOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => write!(f, "file {:?}", path.display().to_string()),
            Self::Env(var) => write!(f, "environment variable {var}"),
            Self::Value => f.write_str("the value given"),
            Self::Call => f.write_str("the call's authorization metadata"),
        }
    }
}

/// What is wrong with a token; carried by [`TokenError`]. None of them shows the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenProblem {
    /// The file cannot be read.
    #[error("cannot be read")]
    Unreadable(#[source] std::io::Error),
    /// Too short or too long.
    #[error("is {len} bytes long; a token is {min} to {max} bytes of printable ASCII",
        min = crate::token::MIN_TOKEN_BYTES, max = crate::token::MAX_TOKEN_BYTES)]
    Length {
        /// Its length in bytes.
        len: usize,
    },
    /// A byte that is not printable ASCII (a control character, a non-ASCII byte).
    #[error("has a byte that is not printable ASCII at byte {at}; a token is printable ASCII")]
    NotPrintable {
        /// Where.
        at: usize,
    },
    /// A space at its start or end, which gRPC metadata would not carry.
    #[error("starts or ends with a space; inner spaces are fine, not those at either end")]
    EdgeSpace,
}
