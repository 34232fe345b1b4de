//! [`Code`]: what kind of failure a rendezvous call met, in the crate's own terms.

/// The kind of a failed rendezvous call, as [`Error::Refused`](crate::Error::Refused) and
/// [`Error::Unreachable`](crate::Error::Unreachable) carry it: one for each of gRPC's error
/// codes (the built-in rendezvous answers with them, and etcd fails with them), whichever
/// backend the client talks to.
///
/// The rendezvous's own refusals are [`InvalidArgument`](Self::InvalidArgument),
/// [`FailedPrecondition`](Self::FailedPrecondition), [`NotFound`](Self::NotFound),
/// [`AlreadyExists`](Self::AlreadyExists), [`ResourceExhausted`](Self::ResourceExhausted),
/// [`Unauthenticated`](Self::Unauthenticated) and
/// [`PermissionDenied`](Self::PermissionDenied); a rendezvous it cannot reach (or that has
/// no answer in time) is [`Unavailable`](Self::Unavailable) or
/// [`DeadlineExceeded`](Self::DeadlineExceeded); a stored job that does not load,
/// [`DataLoss`](Self::DataLoss). The others come from the transport or the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
// Each variant is gRPC's number for it, so the edge converts by number, not by a table.
pub enum Code {
    /// The call was cancelled (a connection lost mid-call).
    Cancelled = 1,
    /// A failure of no known kind.
    Unknown = 2,
    /// The request is invalid.
    InvalidArgument = 3,
    /// No answer came in time.
    DeadlineExceeded = 4,
    /// The job or node named is not there.
    NotFound = 5,
    /// What the call would create is there already (an address another node holds).
    AlreadyExists = 6,
    /// The caller may not do this (a node's id without its secret, a host outside the
    /// allowed networks).
    PermissionDenied = 7,
    /// A limit is reached (the rendezvous's jobs, its memory for requests for now).
    ResourceExhausted = 8,
    /// The job cannot take the request in its state.
    FailedPrecondition = 9,
    /// The operation was aborted.
    Aborted = 10,
    /// A value is out of range.
    OutOfRange = 11,
    /// The peer does not have the call (a rendezvous of another version).
    Unimplemented = 12,
    /// The peer broke.
    Internal = 13,
    /// The rendezvous (or its store) cannot be reached, or cannot answer now.
    Unavailable = 14,
    /// A stored state does not load.
    DataLoss = 15,
    /// The call lacks the token of the rendezvous or the job.
    Unauthenticated = 16,
}

impl Code {
    /// The code gRPC numbers `number`; 0 (OK, which no failure has) and numbers past gRPC's
    /// are [`Code::Unknown`].
    pub(crate) fn from_number(number: i32) -> Self {
        match number {
            1 => Self::Cancelled,
            2 => Self::Unknown,
            3 => Self::InvalidArgument,
            4 => Self::DeadlineExceeded,
            5 => Self::NotFound,
            6 => Self::AlreadyExists,
            7 => Self::PermissionDenied,
            8 => Self::ResourceExhausted,
            9 => Self::FailedPrecondition,
            10 => Self::Aborted,
            11 => Self::OutOfRange,
            12 => Self::Unimplemented,
            13 => Self::Internal,
            14 => Self::Unavailable,
            15 => Self::DataLoss,
            16 => Self::Unauthenticated,
            _ => Self::Unknown,
        }
    }

    /// The code's name as gRPC's Rust implementations write it (`FailedPrecondition`), which
    /// messages show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "Cancelled",
            Self::Unknown => "Unknown",
            Self::InvalidArgument => "InvalidArgument",
            Self::DeadlineExceeded => "DeadlineExceeded",
            Self::NotFound => "NotFound",
            Self::AlreadyExists => "AlreadyExists",
            Self::PermissionDenied => "PermissionDenied",
            Self::ResourceExhausted => "ResourceExhausted",
            Self::FailedPrecondition => "FailedPrecondition",
            Self::Aborted => "Aborted",
            Self::OutOfRange => "OutOfRange",
            Self::Unimplemented => "Unimplemented",
            Self::Internal => "Internal",
            Self::Unavailable => "Unavailable",
            Self::DataLoss => "DataLoss",
            Self::Unauthenticated => "Unauthenticated",
        }
    }

    /// Every code, in gRPC's order.
    #[cfg(test)]
    pub(crate) const ALL: [Code; 16] = [
        Self::Cancelled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
    ];
}

impl std::fmt::Display for Code {
    /// [`as_str`](Self::as_str).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
