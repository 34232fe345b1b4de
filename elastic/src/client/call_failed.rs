//! [`CallFailed`]: why a call of the client's failed, whichever backend it went to: the
//! rendezvous's error in the crate's own terms ([`CallError`]), or an answer the client
//! cannot use. The gRPC client turns what it receives into it at its edge.

use std::time::Duration;

use crate::Error;
use crate::rendezvous::CallError;

/// Why a call to a [`Backend`](super::backend::Backend) failed.
#[derive(Debug)]
pub(crate) enum CallFailed {
    /// The call failed: the rendezvous unreachable, no answer in time, or its refusal.
    Call {
        /// Why.
        error: CallError,
        /// How long the rendezvous asked the caller to wait before it tries again, when it
        /// refused the call only for now (gRPC's retry pushback, which the built-in
        /// rendezvous sends with `ResourceExhausted` for want of memory).
        retry_after: Option<Duration>,
    },
    /// An answer the client cannot use ([`Error::InvalidResponse`]).
    Answer(Error),
}

impl From<CallError> for CallFailed {
    fn from(error: CallError) -> Self {
        Self::Call {
            error,
            retry_after: None,
        }
    }
}
