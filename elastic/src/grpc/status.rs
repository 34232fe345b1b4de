//! Where gRPC's statuses meet the crate's own errors, the only place that makes or reads
//! one outside the generated code and the tonic adapters: a [`CallError`] as the status a
//! caller gets ([`status_of`]), a status the client received as the client's [`CallFailed`]
//! ([`received`]), a store's status (etcd speaks gRPC) read into its parts ([`parts`]), the
//! crate's [`Code`] and gRPC's, one to one (and as numbers, for the etcd store's records), and
//! a code's name as the rendezvous's metrics label it ([`code_label`]).

use std::time::Duration;

use tonic::Status;

use crate::client::call_failed::CallFailed;
use crate::error::code::Code;
use crate::received::{MAX_TEXT, clean_line};
use crate::rendezvous::CallError;

/// gRPC's code for `code` ([`Code`]'s variants are gRPC's numbers).
fn grpc_code(code: Code) -> tonic::Code {
    tonic::Code::from(code as i32)
}

/// The crate's code for gRPC's `code` of a failure: `Ok`, which no failure should have, is
/// [`Code::Unknown`].
fn code_of(code: tonic::Code) -> Code {
    Code::from_number(code as i32)
}

#[cfg(feature = "etcd")]
/// `code` as gRPC numbers it (a refusal in the etcd store's record of a join's answer).
pub(crate) fn code_number(code: Code) -> i32 {
    code as i32
}

#[cfg(feature = "etcd")]
/// The code gRPC numbers `number` (an unknown number is [`Code::Unknown`]).
pub(crate) fn code_of_number(number: i32) -> Code {
    Code::from_number(number)
}

/// The status a caller gets for `error`: its code, and its message unchanged.
pub(crate) fn status_of(error: CallError) -> Status {
    if let CallError::Refused(refusal) = &error {
        tracing::debug!(%refusal, "request refused");
    }
    Status::new(grpc_code(error.code()), error.to_string())
}

#[cfg(feature = "etcd")]
/// A status's code, message and the cause it carries (a failed connection's, such as a
/// refused certificate), as a store's failure is read ([`CallError::of_code`] makes the
/// store's error of them).
pub(crate) fn parts(status: &Status) -> (Code, String, Option<&(dyn std::error::Error + 'static)>) {
    (
        code_of(status.code()),
        clean_line(status.message(), MAX_TEXT),
        std::error::Error::source(status),
    )
}

/// What the client makes of a `status` it received for a call: its code, its message with
/// the innermost cause tonic kept (the `Connection refused` under a transport error, not
/// tonic's whole debug form), and the server's retry pushback. A connection the server
/// closed because this host is outside its allowed networks is `PermissionDenied`: that will
/// not change by trying again.
pub(crate) fn received(status: &Status) -> CallFailed {
    // A hostile server's text: printed by `status` and in an agent's error.
    let message = clean_line(&message_with_cause(status), MAX_TEXT);
    let error = match code_of(status.code()) {
        Code::Unavailable if shut_out(&message) => {
            let said = if message.is_empty() {
                "Unavailable".to_owned()
            } else {
                format!("Unavailable: {message}")
            };
            CallError::of_code(
                Code::PermissionDenied,
                format!(
                    "this host is not in the rendezvous's allowed networks (its --allow or \
                     --rdzv-allow): {said}"
                ),
            )
        }
        code => CallError::of_code(code, message),
    };
    CallFailed::Call {
        error,
        retry_after: pushback(status),
    }
}

/// A status the gRPC client received, as the client's failure ([`received`]).
impl From<Status> for CallFailed {
    fn from(status: Status) -> Self {
        received(&status)
    }
}

/// Whether a status's text says the server closed the connection because this host is
/// outside its allowed networks (the text of its `GOAWAY` in plaintext, the `access_denied`
/// alert in TLS), which is the innermost cause's, not the status's message.
fn shut_out(text: &str) -> bool {
    text.contains("allowed networks") || text.contains("AccessDenied")
}

/// `status`'s message, then its innermost cause in parentheses when the message does not
/// say it already (the cause alone for a status without a message).
fn message_with_cause(status: &Status) -> String {
    let mut text = status.message().to_owned();
    let mut cause = std::error::Error::source(status);
    let mut innermost = None;
    while let Some(c) = cause {
        innermost = Some(c);
        cause = c.source();
    }
    if let Some(c) = innermost {
        let c = c.to_string();
        if text.is_empty() {
            text = c;
        } else if !text.contains(&c) {
            text.push_str(" (");
            text.push_str(&c);
            text.push(')');
        }
    }
    text
}

/// How long a server that refused a call for now asks the caller to wait before trying again
/// (gRPC's `grpc-retry-pushback-ms`, which the rendezvous sends with `RESOURCE_EXHAUSTED`
/// for want of memory).
fn pushback(status: &Status) -> Option<Duration> {
    let ms: u64 = status
        .metadata()
        .get(grpc_guard::PUSHBACK_HEADER)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    Some(Duration::from_millis(ms))
}

/// gRPC's name for `code` (`OK`, `INVALID_ARGUMENT`, ...): the `code` label of
/// `tfcluster_rendezvous_requests_total`.
pub(crate) fn code_label(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "OK",
        tonic::Code::Cancelled => "CANCELLED",
        tonic::Code::Unknown => "UNKNOWN",
        tonic::Code::InvalidArgument => "INVALID_ARGUMENT",
        tonic::Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        tonic::Code::NotFound => "NOT_FOUND",
        tonic::Code::AlreadyExists => "ALREADY_EXISTS",
        tonic::Code::PermissionDenied => "PERMISSION_DENIED",
        tonic::Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        tonic::Code::FailedPrecondition => "FAILED_PRECONDITION",
        tonic::Code::Aborted => "ABORTED",
        tonic::Code::OutOfRange => "OUT_OF_RANGE",
        tonic::Code::Unimplemented => "UNIMPLEMENTED",
        tonic::Code::Internal => "INTERNAL",
        tonic::Code::Unavailable => "UNAVAILABLE",
        tonic::Code::DataLoss => "DATA_LOSS",
        tonic::Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a status received is, as the client sees it.
    fn error_of(status: &Status) -> CallError {
        match received(status) {
            CallFailed::Call { error, .. } => error,
            CallFailed::Answer(e) => panic!("{e}"),
        }
    }

    #[test]
    fn every_code_comes_back_as_it_went() {
        for code in 1..=16 {
            let status = Status::new(tonic::Code::from(code), "why");
            let back = status_of(error_of(&status));
            assert_eq!((back.code(), back.message()), (status.code(), "why"));
            #[cfg(feature = "etcd")]
            assert_eq!(
                code_of_number(code_number(code_of(status.code()))),
                code_of(status.code())
            );
        }
    }

    #[test]
    fn a_code_reads_as_tonic_names_it() {
        for code in Code::ALL {
            assert_eq!(code.as_str(), format!("{:?}", grpc_code(code)));
        }
    }

    #[test]
    fn a_status_received_keeps_its_innermost_cause_and_pushback() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let mut status = Status::unavailable("tcp connect error");
        status.set_source(std::sync::Arc::new(refused));
        let value = "250".parse().expect("a metadata value");
        status
            .metadata_mut()
            .insert(grpc_guard::PUSHBACK_HEADER, value);
        let CallFailed::Call { error, retry_after } = received(&status) else {
            panic!("a call's failure");
        };
        assert_eq!(
            error,
            CallError::Unavailable("tcp connect error (refused)".into())
        );
        assert_eq!(retry_after, Some(Duration::from_millis(250)));
    }

    #[test]
    fn a_goaway_for_a_host_outside_the_allowed_networks_is_permission_denied() {
        let status = Status::unavailable("connection closed: not in the allowed networks");
        assert_eq!(
            error_of(&status),
            CallError::of_code(
                Code::PermissionDenied,
                "this host is not in the rendezvous's allowed networks (its --allow or \
                 --rdzv-allow): Unavailable: connection closed: not in the allowed networks"
                    .into()
            )
        );
    }

    #[test]
    fn the_metrics_label_codes_by_grpc_names() {
        let metrics = crate::RendezvousMetrics::default();
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        use crate::rendezvous::Method;
        metrics.answered(Method::Join, code_label(tonic::Code::Ok));
        metrics.answered(
            Method::Heartbeat,
            code_label(tonic::Code::FailedPrecondition),
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encoded");
        for line in [
            r#"tfcluster_rendezvous_requests_total{method="Join",code="OK"} 1"#,
            r#"tfcluster_rendezvous_requests_total{method="Heartbeat",code="FAILED_PRECONDITION"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        assert_eq!(code_label(tonic::Code::Unauthenticated), "UNAUTHENTICATED");
    }
}
