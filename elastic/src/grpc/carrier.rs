//! How a call's [`Credentials`] travel over gRPC: in its metadata, never in the message, so
//! no request message (nor the etcd backend's record of a join, which holds one) ever holds
//! a token or a secret. The job's token is `authorization: Bearer TOKEN`, the node's secret
//! `tfcluster-node-secret: SECRET`; a new node's secret comes back in
//! `JoinResponse.node_secret` when the rendezvous drew it.

use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Status};

use crate::Token;
use crate::error::token::TokenOrigin;
use crate::rendezvous::{Credentials, NodeSecret};

/// The metadata key of the job's token (as `Bearer TOKEN`).
const AUTHORIZATION: &str = "authorization";
/// The metadata key of the node's secret.
const NODE_SECRET: &str = "tfcluster-node-secret";
const BEARER: &str = "Bearer ";

/// Puts `credentials` in `request`'s metadata. A token or secret is printable ASCII by
/// construction, so each is a valid metadata value. Each is marked sensitive: HTTP/2 sends
/// it never-indexed (HPACK keeps no copy in either side's table) and a `Debug` print of the
/// metadata shows `Sensitive`, not the value.
pub(super) fn attach<T>(request: &mut Request<T>, credentials: &Credentials) {
    let metadata = request.metadata_mut();
    if let Some(token) = &credentials.token
        && let Ok(value) = sensitive(&format!("{BEARER}{}", token.expose_secret()))
    {
        metadata.insert(AUTHORIZATION, value);
    }
    if let Some(secret) = &credentials.secret
        && let Ok(value) = sensitive(secret.expose())
    {
        metadata.insert(NODE_SECRET, value);
    }
}

/// `text` as a metadata value marked sensitive.
fn sensitive(
    text: &str,
) -> Result<MetadataValue<tonic::metadata::Ascii>, tonic::metadata::errors::InvalidMetadataValue> {
    let mut value = MetadataValue::try_from(text)?;
    value.set_sensitive(true);
    Ok(value)
}

/// The credentials `call`'s `metadata` carries. One that is there but is no token (not
/// `Bearer`, not printable, out of length) is `UNAUTHENTICATED`, saying why, never what.
pub(super) fn credentials(metadata: &MetadataMap, call: &str) -> Result<Credentials, Status> {
    let text = |key: &str| -> Result<Option<String>, Status> {
        metadata
            .get(key)
            .map(|v| {
                v.to_str().map(str::to_owned).map_err(|_| {
                    Status::unauthenticated(format!(
                        "{call}: metadata {key} is not printable ASCII"
                    ))
                })
            })
            .transpose()
    };
    let refused = |e: crate::TokenError| Status::unauthenticated(format!("{call}: {e}"));
    let token = match text(AUTHORIZATION)? {
        None => None,
        Some(value) => {
            let Some(token) = value.strip_prefix(BEARER) else {
                return Err(Status::unauthenticated(format!(
                    "{call}: metadata {AUTHORIZATION} is not \"Bearer TOKEN\""
                )));
            };
            Some(Token::checked(token.to_owned(), TokenOrigin::Call).map_err(refused)?)
        }
    };
    let secret = text(NODE_SECRET)?
        .map(NodeSecret::received)
        .transpose()
        .map_err(|e| {
            Status::unauthenticated(format!(
                "{call}: metadata {NODE_SECRET} is no node secret: it {}",
                e.problem
            ))
        })?;
    Ok(Credentials { token, secret })
}

#[cfg(test)]
mod tests {
    use tonic::Request;

    use super::{attach, credentials};
    use crate::Token;
    use crate::rendezvous::{Credentials, NodeSecret};

    #[test]
    fn token_and_secret_travel_marked_sensitive_and_a_debug_print_hides_them() {
        let token = "0123456789abcdef0123456789abcdef";
        let sent = Credentials {
            token: Some(Token::new(token).unwrap()),
            secret: Some(NodeSecret::generate()),
        };
        let secret = sent.secret.as_ref().unwrap().expose().to_owned();
        let mut request = Request::new(());
        attach(&mut request, &sent);
        let metadata = request.metadata();
        for key in ["authorization", "tfcluster-node-secret"] {
            assert!(metadata.get(key).unwrap().is_sensitive(), "{key}");
        }
        let shown = format!("{metadata:?}");
        assert!(
            !shown.contains(token) && !shown.contains(&secret),
            "{shown}"
        );
        let received = credentials(metadata, "Join").unwrap();
        assert_eq!(received.token.unwrap().expose_secret(), token);
        assert_eq!(received.secret.unwrap().expose(), secret);
    }
}
