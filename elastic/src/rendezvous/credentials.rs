//! What a call proves about its caller: the job's [`Token`] and the calling node's
//! [`NodeSecret`] as the call carries them ([`Credentials`]), and their SHA-256 hashes
//! ([`Proof`]), which are all the rules see and all a store keeps. Hashes are compared in
//! constant time ([`Digest`]'s `PartialEq`), so a refusal's timing says nothing of how much
//! of a guess was right.

use sha2::{Digest as _, Sha256};
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
    /// Their hashes.
    pub(crate) fn proof(&self) -> Proof {
        Proof {
            token: self.token.as_ref().map(|t| Digest::of(t.expose_secret())),
            secret: self.secret.as_ref().map(|s| Digest::of(s.expose())),
        }
    }
}

/// The hashes of what a call carries: what the rules check, and what a store keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Proof {
    pub(crate) token: Option<Digest>,
    pub(crate) secret: Option<Digest>,
}

/// A SHA-256 hash, compared in constant time. Its `Debug` shows a prefix only: enough to
/// tell two apart in a test, too little to matter.
#[derive(Clone, Copy)]
pub(crate) struct Digest([u8; 32]);

impl Digest {
    pub(crate) fn of(value: &str) -> Self {
        Self(Sha256::digest(value.as_bytes()).into())
    }

    /// A hash as a stored record holds it: 32 bytes, else none (an older record).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_never_shown() {
        let (a, b) = (NodeSecret::generate(), NodeSecret::generate());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 32);
        let credentials = Credentials {
            token: Some(Token::new("0123456789abcdef").unwrap()),
            secret: Some(a.clone()),
        };
        let shown = format!("{credentials:?} {:?}", credentials.proof());
        assert!(
            !shown.contains("0123456789abcdef") && !shown.contains(a.expose()),
            "{shown}"
        );
        assert_eq!(credentials.proof(), credentials.clone().proof());
        assert_ne!(Digest::of(a.expose()), Digest::of(b.expose()));
        // The etcd record's form of a hash.
        #[cfg(feature = "etcd")]
        {
            let d = Digest::of("x");
            assert_eq!(Digest::from_stored(&d.to_stored()), Some(d));
            assert_eq!(Digest::from_stored(&[]), None);
        }
    }
}
