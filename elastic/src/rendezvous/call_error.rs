//! [`CallError`]: why a rendezvous call failed, in the crate's own terms: the registry's
//! refusals (its [`Refusal`], whole), and what a store adds (unavailable for now, no answer in time, a stored state
//! that does not load), and what the transport or the store fails with otherwise, by its
//! [`Code`]. It is the client's currency for both backends; the gRPC layer turns each into
//! its status and back ([`grpc::status`](crate::grpc::status)), one to one.

use super::registry::Refusal;
use crate::error::code::Code;

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
    /// A failure of another kind, its code kept so the caller sees what was said: the
    /// store's own (etcd: permission denied, a request too large, ...) or the transport's (a
    /// call cancelled, an internal error, a call the peer does not have).
    #[error("{message}")]
    Other {
        /// Its kind.
        code: Code,
        /// Its message.
        message: String,
    },
}

impl CallError {
    /// The error of `code` with `message`: the one kind each code is (the reverse of
    /// [`code`](Self::code)).
    pub(crate) fn of_code(code: Code, message: String) -> Self {
        match code {
            Code::InvalidArgument => Refusal::InvalidArgument(message).into(),
            Code::FailedPrecondition => Refusal::FailedPrecondition(message).into(),
            Code::NotFound => Refusal::NotFound(message).into(),
            Code::AlreadyExists => Refusal::AlreadyExists(message).into(),
            Code::ResourceExhausted => Refusal::ResourceExhausted(message).into(),
            Code::Unauthenticated => Refusal::Unauthenticated(message).into(),
            Code::PermissionDenied => Refusal::PermissionDenied(message).into(),
            Code::Unavailable => Self::Unavailable(message),
            Code::DeadlineExceeded => Self::DeadlineExceeded(message),
            Code::DataLoss => Self::BrokenState(message),
            code => Self::Other { code, message },
        }
    }

    /// The error's kind.
    pub(crate) fn code(&self) -> Code {
        match self {
            Self::Refused(refusal) => match refusal {
                Refusal::InvalidArgument(_) => Code::InvalidArgument,
                Refusal::FailedPrecondition(_) => Code::FailedPrecondition,
                Refusal::NotFound(_) => Code::NotFound,
                Refusal::AlreadyExists(_) => Code::AlreadyExists,
                Refusal::ResourceExhausted(_) => Code::ResourceExhausted,
                Refusal::Unauthenticated(_) => Code::Unauthenticated,
                Refusal::PermissionDenied(_) => Code::PermissionDenied,
            },
            Self::Unavailable(_) => Code::Unavailable,
            Self::DeadlineExceeded(_) => Code::DeadlineExceeded,
            Self::BrokenState(_) => Code::DataLoss,
            Self::Other { code, .. } => *code,
        }
    }

    /// Whether the caller should try again: the rendezvous or its store unreachable, no
    /// answer in time, a call cut off (a connection lost or closed).
    pub(crate) fn is_transient(&self) -> bool {
        matches!(
            self.code(),
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled
        )
    }

    /// A request whose message breaks the protocol or carries an invalid value: `error`'s
    /// whole chain is the message.
    pub(crate) fn invalid(error: &crate::Error) -> Self {
        Self::Refused(Refusal::InvalidArgument(
            cluster_spec::__private::error_chain::Chain(error).to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_one_kind_and_comes_back() {
        for code in Code::ALL {
            let error = CallError::of_code(code, "why".to_owned());
            assert_eq!((error.code(), error.to_string()), (code, "why".to_owned()));
        }
    }
}
