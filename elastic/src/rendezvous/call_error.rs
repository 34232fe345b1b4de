//! [`CallError`]: why a rendezvous call failed, in the crate's own terms: the registry's
//! refusals (its [`Refusal`], whole), and what a store adds (unavailable for now, no answer in time, a stored state
//! that does not load). The gRPC layer turns each into its status, one to one.

use super::registry::Refusal;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallError {
    /// The rules refused the request (an invalid request, a job that cannot take it, an
    /// unknown job or node, an address held, a limit reached).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The rendezvous cannot answer now (shutting down, its store unreachable or without a
    /// leader): the caller retries.
    #[error("{0}")]
    Unavailable(String),
    /// The store did not answer in time: the caller retries.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// A stored job does not load: its state is broken, and retrying changes nothing.
    #[error("{0}")]
    BrokenState(String),
    /// The store refused the call for a reason of its own (etcd, which speaks gRPC:
    /// permission denied, a request too large, ...), its gRPC code kept so the caller sees
    /// what the store said.
    #[error("{message}")]
    Store {
        /// The store's gRPC status code.
        code: i32,
        /// The store's message.
        message: String,
    },
}

impl CallError {
    /// A request whose message breaks the protocol or carries an invalid value: `error`'s
    /// whole chain is the message.
    pub(crate) fn invalid(error: &crate::Error) -> Self {
        Self::Refused(Refusal::InvalidArgument(
            cluster_spec::__private::error_chain::Chain(error).to_string(),
        ))
    }
}
