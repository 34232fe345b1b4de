//! What a command can fail with: [`Failure`], an error to print and the exit status.

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
