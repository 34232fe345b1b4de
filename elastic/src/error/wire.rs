//! [`WireError`]: why a message from a rendezvous peer does not follow the protocol.

/// A request to the rendezvous, or its answer, that breaks the protocol: a field that must be
/// set is not, or a value is out of its range. A value with rules of its own fails with its
/// own error instead: a job config's node range with [`NodesError`](crate::NodesError), its
/// layout with [`LayoutError`](crate::LayoutError), the whole with
/// [`ConfigError`](crate::ConfigError).
///
/// The server refuses such a request with `INVALID_ARGUMENT` and this message; the client
/// fails with [`Error::InvalidResponse`](crate::Error::InvalidResponse), this its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A field that must be set is not.
    #[error("{field} is missing")]
    Missing {
        /// The field, as a message names it (`"the job config"`).
        field: &'static str,
    },
    /// A port is not from 1 to 65535.
    #[error("port {port} is not from 1 to 65535")]
    Port {
        /// The value sent.
        port: u32,
    },
    /// An end reason this version does not know.
    #[error("unknown end reason {value}")]
    EndReason {
        /// The value sent.
        value: i32,
    },
    /// A value of an enum this version does not know (a restart scope, an in-place
    /// restart).
    #[error("unknown {field} {value}")]
    Unknown {
        /// The field, as a message names it (`"restart scope"`).
        field: &'static str,
        /// The value sent.
        value: i32,
    },
    /// A job state this version does not know.
    #[error("unknown job state {value:?}")]
    JobState {
        /// The value sent.
        value: String,
    },
    /// A stored job (the etcd backend's record) has no 32-byte hash for its token or a
    /// node's secret and does not mark it open, or does both: refused, never taken as open.
    #[error(
        "{whose} has a {len}-byte hash and open = {open}: a record must hold either its 32-byte \
         hash or the open mark, and one whose hash was removed is refused, not taken as open"
    )]
    Unsealed {
        /// Whose hash: `"the job's token"` or `"a node's secret"`.
        whose: &'static str,
        /// The hash's length in bytes.
        len: usize,
        /// Whether the record marks it open.
        open: bool,
    },
    /// A stored job names a round it does not hold (the etcd backend's record).
    #[error("round {round} is named but not stored")]
    UnknownRound {
        /// The round's number.
        round: u64,
    },
    /// A duration or count from the rendezvous outside the bounds the client accepts.
    #[error("{field} {value} is outside its bounds {range}")]
    OutOfRange {
        /// The field, as a message names it (`"the heartbeat timeout"`).
        field: &'static str,
        /// The value sent, with its unit.
        value: String,
        /// The bounds, e.g. `100 ms ..= 3600000 ms`.
        range: String,
    },
    /// A string from the rendezvous longer than its field allows.
    #[error("{field} is {len} bytes, more than its {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The most it may have.
        max: usize,
    },
    /// An id or host from the rendezvous with a control character in it.
    #[error("{field} has the control character {c:?} at byte {at}")]
    Control {
        /// The field.
        field: &'static str,
        /// The byte it is at.
        at: usize,
        /// The character.
        c: char,
    },
}
