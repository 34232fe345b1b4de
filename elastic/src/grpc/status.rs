//! A [`CallError`] as the gRPC status a caller gets, and a store's gRPC status (etcd speaks
//! gRPC) as a [`CallError`]: each kind one code, the message unchanged.

use tonic::{Code, Status};

use crate::rendezvous::CallError;
use crate::rendezvous::registry::Refusal;

/// The status a caller gets for `error`.
pub(crate) fn status_of(error: CallError) -> Status {
    match error {
        CallError::Refused(refusal) => {
            tracing::debug!(%refusal, "request refused");
            match refusal {
                Refusal::InvalidArgument(m) => Status::invalid_argument(m),
                Refusal::FailedPrecondition(m) => Status::failed_precondition(m),
                Refusal::NotFound(m) => Status::not_found(m),
                Refusal::AlreadyExists(m) => Status::already_exists(m),
                Refusal::ResourceExhausted(m) => Status::resource_exhausted(m),
                Refusal::Unauthenticated(m) => Status::unauthenticated(m),
                Refusal::PermissionDenied(m) => Status::permission_denied(m),
            }
        }
        CallError::Unavailable(m) => Status::unavailable(m),
        CallError::DeadlineExceeded(m) => Status::deadline_exceeded(m),
        CallError::BrokenState(m) => Status::data_loss(m),
        CallError::Store { code, message } => Status::new(Code::from(code), message),
    }
}

/// etcd's failures, which are gRPC statuses, as the store's errors.
impl From<Status> for CallError {
    fn from(status: Status) -> Self {
        call_error_of(&status)
    }
}

/// The error a gRPC `status` from a store is (the reverse of [`status_of`]).
pub(crate) fn call_error_of(status: &Status) -> CallError {
    let message = status.message().to_owned();
    match status.code() {
        Code::InvalidArgument => Refusal::InvalidArgument(message).into(),
        Code::FailedPrecondition => Refusal::FailedPrecondition(message).into(),
        Code::NotFound => Refusal::NotFound(message).into(),
        Code::AlreadyExists => Refusal::AlreadyExists(message).into(),
        Code::ResourceExhausted => Refusal::ResourceExhausted(message).into(),
        Code::Unauthenticated => Refusal::Unauthenticated(message).into(),
        Code::PermissionDenied => Refusal::PermissionDenied(message).into(),
        Code::Unavailable => CallError::Unavailable(message),
        Code::DeadlineExceeded => CallError::DeadlineExceeded(message),
        Code::DataLoss => CallError::BrokenState(message),
        code => CallError::Store {
            code: code as i32,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_comes_back_as_it_went() {
        for code in 0..=16 {
            let status = Status::new(Code::from(code), "why");
            let back = status_of(call_error_of(&status));
            assert_eq!((back.code(), back.message()), (status.code(), "why"));
        }
    }
}
