//! What a call proves about its caller: the job's [`Token`] and the calling node's
//! [`NodeSecret`] as the call carries them ([`Credentials`]), and their hashes keyed by the
//! job the call is to ([`Proof`]), which are all the rules see and all a store keeps. Each
//! hash is an HMAC-SHA256 whose key holds the job's id: one token hashes differently in
//! every job, so a hash read from one job's etcd record matches no other job's, and no table
//! built for one job serves another. Every agent derives the key from the id alone, so a
//! joining agent can write its hashes before it reads the job's record. Hashes are compared
//! in constant time ([`Digest`]'s `PartialEq`), so a refusal's timing says nothing of how
//! much of a guess was right.
//!
//! No slow key derivation: every call (heartbeats too) is checked, and a hash that cost a
//! guesser much would cost the rendezvous as much for each call a stranger makes. A token
//! from `tfcluster rendezvous token` (256 random bits) is no guess; reading the hashes at all
//! needs read access to the job's etcd prefix, which the guide's roles give its agents only.

use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::Token;
use crate::error::token::{TokenError, TokenOrigin};

/// A node's own secret: drawn for it when it first joins (128 bits from the OS), sent with
/// each of its calls, and known to no one else. Its `Debug` shows nothing.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct NodeSecret(Token);

impl std::fmt::Debug for NodeSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeSecret(<redacted>)")
    }
}

impl NodeSecret {
    /// A fresh secret: 128 random bits, in hex.
    pub(crate) fn generate() -> Self {
        Self(Token::random::<16>())
    }

    /// A secret as a call or an answer carries it, checked as a token is.
    pub(crate) fn received(value: String) -> Result<Self, TokenError> {
        Token::checked(value, TokenOrigin::Call).map(Self)
    }

    /// The value, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

/// What a call carries: the job's token and the calling node's secret, each when it has one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Credentials {
    pub(crate) token: Option<Token>,
    pub(crate) secret: Option<NodeSecret>,
}

impl Credentials {
    /// Their hashes, for a call to job `rdzv_id`.
    pub(crate) fn proof(&self, rdzv_id: &str) -> Proof {
        Proof {
            token: self
                .token
                .as_ref()
                .map(|t| Digest::keyed(rdzv_id, t.expose_secret())),
            secret: self
                .secret
                .as_ref()
                .map(|s| Digest::keyed(rdzv_id, s.expose())),
        }
    }
}

/// The hashes of what a call to one job carries: what the rules check, and what a store
/// keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Proof {
    pub(crate) token: Option<Digest>,
    pub(crate) secret: Option<Digest>,
}

/// A keyed hash (HMAC-SHA256) of a token or secret for one job, compared in constant time.
/// Its `Debug` shows a prefix only: enough to tell two apart in a test, too little to matter.
#[derive(Clone, Copy)]
pub(crate) struct Digest([u8; 32]);

impl Digest {
    /// The hash of `value` in job `rdzv_id`.
    pub(crate) fn keyed(rdzv_id: &str, value: &str) -> Self {
        let key = format!("tfcluster rendezvous job\0{rdzv_id}");
        let mut mac =
            Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes a key of any size");
        mac.update(value.as_bytes());
        Self(mac.finalize().into_bytes().into())
    }

    /// A hash as a stored record holds it: 32 bytes, else none.
    #[cfg(feature = "etcd")]
    pub(crate) fn from_stored(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    #[cfg(feature = "etcd")]
    pub(crate) fn to_stored(self) -> Vec<u8> {
        self.0.to_vec()
    }
}

impl PartialEq for Digest {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for Digest {}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Digest({:02x}{:02x}..)", self.0[0], self.0[1])
    }
}

/// The stored form of an optional hash: empty for none.
#[cfg(feature = "etcd")]
pub(crate) fn stored(digest: Option<Digest>) -> Vec<u8> {
    digest.map(Digest::to_stored).unwrap_or_default()
}

/// The hash a record keeps for `whose` (the job's token, a node's secret), or none when the
/// record marks it `open`: exactly one of the two, else the record is refused. A hash that
/// vanished (an edit of the record, a cut write) must not turn a job or a node open.
#[cfg(feature = "etcd")]
pub(crate) fn loaded(
    hash: &[u8],
    open: bool,
    whose: &'static str,
) -> Result<Option<Digest>, crate::WireError> {
    match (Digest::from_stored(hash), open) {
        (Some(digest), false) => Ok(Some(digest)),
        (None, true) if hash.is_empty() => Ok(None),
        _ => Err(crate::WireError::Unsealed {
            whose,
            len: hash.len(),
            open,
        }),
    }
}

#[cfg(test)]
mod tests {
    use sha2::Digest as _;

    use super::*;

    #[test]
    fn one_token_hashes_differently_in_each_job_and_never_as_its_plain_sha256() {
        let token = "a human-chosen token";
        let (one, two) = (Digest::keyed("train", token), Digest::keyed("eval", token));
        assert_ne!(one, two);
        assert_eq!(one, Digest::keyed("train", token));
        let plain: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        assert!(one.0 != plain && two.0 != plain);
        // The job id is not confused with the value: ("a", "bc") is not ("ab", "c").
        assert_ne!(Digest::keyed("a", "bc"), Digest::keyed("ab", "c"));
    }

    #[test]
    fn secrets_are_random_and_never_shown() {
        let (a, b) = (NodeSecret::generate(), NodeSecret::generate());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 32);
        let credentials = Credentials {
            token: Some(Token::new("0123456789abcdef").unwrap()),
            secret: Some(a.clone()),
        };
        let shown = format!("{credentials:?} {:?}", credentials.proof("job"));
        assert!(
            !shown.contains("0123456789abcdef") && !shown.contains(a.expose()),
            "{shown}"
        );
        assert_eq!(credentials.proof("job"), credentials.clone().proof("job"));
        assert_ne!(
            Digest::keyed("job", a.expose()),
            Digest::keyed("job", b.expose())
        );
        // The etcd record's form of a hash.
        #[cfg(feature = "etcd")]
        {
            let d = Digest::keyed("job", "x");
            assert_eq!(Digest::from_stored(&d.to_stored()), Some(d));
            assert_eq!(Digest::from_stored(&[]), None);
        }
    }
}
