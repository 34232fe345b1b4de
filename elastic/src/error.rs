//! The crate's error: each area's error wrapped whole, beside the failures of talking to a
//! rendezvous.
//!
//! An area's error lives here, one file each, and the crate root re-exports it; this module
//! depends on nothing above it.

pub(crate) mod code;
pub(crate) mod config;
pub(crate) mod layout;
pub(crate) mod nodes;
pub(crate) mod round;
pub(crate) mod token;
pub(crate) mod wire;

use std::net::SocketAddr;
use std::time::Duration;

use cluster_spec::__private::quote::quote;

use code::Code;
use config::ConfigError;
use layout::LayoutError;
use nodes::NodesError;
use round::RoundError;
use token::TokenError;
use wire::WireError;

/// Everything that can go wrong in this crate.
///
/// The parsers, the round computation and the decoding of wire messages fail with their own
/// types ([`NodesError`], [`LayoutError`], [`ConfigError`], [`RoundError`], [`WireError`],
/// [`TokenError`]),
/// wrapped whole here and printed as they print themselves. Talking to a rendezvous fails
/// with the variants that name the rendezvous's address, the call and, from the rendezvous,
/// its [`Code`] and message (whichever backend: gRPC's statuses and etcd's failures alike).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A node range does not parse or is out of bounds.
    #[error(transparent)]
    Nodes(#[from] NodesError),
    /// A layout does not parse.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A job's config does not fit together.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A round's members make no cluster.
    #[error(transparent)]
    Round(#[from] RoundError),
    /// A wire message breaks the protocol (a field missing, a value out of range).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A rendezvous token cannot be read or is not valid.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// A cluster is invalid (a round's cluster that does not parse).
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// A cluster lookup failed (a TF_CONFIG for a task the round does not have).
    #[error(transparent)]
    Resolver(#[from] cluster_resolver::Error),
    /// The rendezvous address is not `HOST:PORT`.
    #[error("invalid rendezvous address {}: expected HOST:PORT", quote(.addr, 0))]
    InvalidAddress {
        /// The address given.
        addr: String,
        /// Why tonic refused it.
        #[source]
        source: tonic::transport::Error,
    },
    /// An etcd endpoint is not `HOST[:PORT]`.
    #[error("invalid etcd endpoint {}: {reason}", quote(.value, 0))]
    InvalidEtcdEndpoint {
        /// The endpoint given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The etcd client refused the endpoints or the TLS settings (a certificate that does not
    /// parse); why is the [`source`](std::error::Error::source).
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[error("cannot use etcd at {endpoints}")]
    Etcd {
        /// The endpoints, `etcd://HOST:PORT,...`.
        endpoints: String,
        /// The etcd client's error.
        #[source]
        source: etcd_client::Error,
    },
    /// The server cannot listen where it was told; why is the
    /// [`source`](std::error::Error::source).
    #[error("cannot serve the rendezvous on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why the bind failed.
        #[source]
        source: std::io::Error,
    },
    /// The rendezvous could not be reached (or did not answer) for as long as the client
    /// keeps trying.
    #[error(
        "rendezvous at {addr} unreachable for {} ({call}): {}",
        duration(*.waited),
        code_text(*.code, .message)
    )]
    Unreachable {
        /// The rendezvous address.
        addr: String,
        /// The call that was tried.
        call: &'static str,
        /// How long the client tried.
        waited: Duration,
        /// The last failure's kind: [`Code::Unavailable`] or [`Code::DeadlineExceeded`]
        /// (or a failure the rendezvous said would pass, such as [`Code::ResourceExhausted`]
        /// for want of memory).
        code: Code,
        /// The last failure's message, with its innermost cause (the `Connection refused`
        /// under a transport error).
        message: String,
    },
    /// The rendezvous answered the call with an error.
    #[error("rendezvous at {addr} refused {call}: {}", code_text(*.code, .message))]
    Refused {
        /// The rendezvous address.
        addr: String,
        /// The call.
        call: &'static str,
        /// Why: [`Code::InvalidArgument`] or [`Code::FailedPrecondition`] for a request the
        /// job cannot take (a different config, a finished job), [`Code::NotFound`] for a
        /// node the job no longer knows, [`Code::Unauthenticated`] without the job's token.
        code: Code,
        /// The rendezvous's message.
        message: String,
    },
    /// No round came before the caller's deadline.
    #[error(
        "no round of job {} within {}: {pending}",
        quote(.rdzv_id, 0),
        duration(*.waited)
    )]
    WaitTimeout {
        /// The job's rendezvous id.
        rdzv_id: String,
        /// How long the client waited.
        waited: Duration,
        /// What the round was still waiting for, as the rendezvous last said.
        pending: String,
    },
    /// The rendezvous answered something this client cannot use: `what` says what, or the
    /// [`source`](std::error::Error::source) does, or both.
    #[error(
        "rendezvous at {addr} answered {call} with an invalid response{}",
        what.as_ref().map_or(String::new(), |what| format!(": {what}"))
    )]
    InvalidResponse {
        /// The rendezvous address.
        addr: String,
        /// The call.
        call: &'static str,
        /// What is wrong with it, unless the source says it all.
        what: Option<String>,
        /// The error the response's content raised, when there is one: a [`WireError`], or
        /// the error of a value that fails its own rules.
        #[source]
        source: Option<Box<Error>>,
    },
    /// A local task index the round does not have.
    #[error("local task {local_task} is not in the round: this node runs {tasks} tasks")]
    NoSuchLocalTask {
        /// The index asked for.
        local_task: u32,
        /// The node's tasks per node.
        tasks: u32,
    },
    /// [`Heartbeats::ended`](crate::Heartbeats::ended) was awaited again after it returned.
    #[error("the heartbeat loop has already reported how its round ended")]
    HeartbeatsFinished,
    /// The job an observer asked for a round of is done: no round will come.
    #[error("job {} is over: {done}", quote(.rdzv_id, 0))]
    JobEnded {
        /// The job's rendezvous id.
        rdzv_id: String,
        /// How it ended, with its first failure.
        done: Box<crate::JobDone>,
    },
}

impl Error {
    /// Whether the rendezvous refused the call's token (`UNAUTHENTICATED`: none, or not the
    /// job's or the rendezvous's): retrying with the same token is no use.
    pub fn is_token_refused(&self) -> bool {
        matches!(
            self,
            Self::Refused {
                code: Code::Unauthenticated,
                ..
            }
        )
    }

    /// Whether the rendezvous does not have what the call named (`NOT_FOUND`): a job no node
    /// joined, or one forgotten since; a node the job no longer knows.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::Refused {
                code: Code::NotFound,
                ..
            }
        )
    }

    /// The client's error for an answer to `call` from `addr` that `cause` makes unusable.
    pub(crate) fn invalid_response(
        addr: &str,
        call: &'static str,
        cause: impl Into<Error>,
    ) -> Self {
        Self::InvalidResponse {
            addr: addr.to_owned(),
            call,
            what: None,
            source: Some(Box::new(cause.into())),
        }
    }
}

/// A duration for a message: milliseconds below a second, else seconds with one decimal.
pub(crate) fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// A failure's code and message, as a message says them: `FailedPrecondition: different
/// config`, or the code alone without a message.
fn code_text(code: Code, message: &str) -> String {
    if message.is_empty() {
        code.to_string()
    } else {
        format!("{code}: {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cluster_spec::__private::error_chain::Chain;

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration(Duration::from_millis(2500)), "2.5 s");
    }

    #[test]
    fn refusal_names_address_call_and_status() {
        let e = Error::Refused {
            addr: "127.0.0.1:29400".into(),
            call: "Join",
            code: Code::FailedPrecondition,
            message: "different config".into(),
        };
        assert_eq!(
            e.to_string(),
            "rendezvous at 127.0.0.1:29400 refused Join: FailedPrecondition: different config"
        );
    }

    #[test]
    fn an_invalid_response_names_the_call_and_keeps_its_cause() {
        let e = Error::invalid_response(
            "127.0.0.1:29400",
            "Heartbeat",
            WireError::Missing {
                field: "the round state",
            },
        );
        // The cause is said once, by the cause.
        assert_eq!(
            e.to_string(),
            "rendezvous at 127.0.0.1:29400 answered Heartbeat with an invalid response"
        );
        assert_eq!(
            Chain(&e).to_string(),
            "rendezvous at 127.0.0.1:29400 answered Heartbeat with an invalid response: the \
             round state is missing"
        );
        let Error::InvalidResponse {
            source: Some(cause),
            ..
        } = &e
        else {
            panic!("{e:?}");
        };
        assert!(
            matches!(**cause, Error::Wire(WireError::Missing { .. })),
            "{cause:?}"
        );
    }
}
