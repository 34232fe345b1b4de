//! The bearer token Google API calls carry: given by the caller, or the VM service account's
//! from the metadata server, reused until shortly before it expires.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::http::HttpClient;
use super::metadata::Metadata;
use crate::{Env, Error};

/// A metadata token is fetched again this long before the server says it expires, so a call
/// never starts with a token about to lapse.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Where access tokens come from (no `Debug`: it holds a secret).
pub(crate) enum Credentials {
    /// The VM's default service account, through the metadata server.
    Metadata {
        /// The last token and when to fetch a new one.
        cached: Mutex<Option<(String, Instant)>>,
    },
    /// A token the caller obtained (e.g. `gcloud auth print-access-token`).
    Token(String),
}

impl Default for Credentials {
    fn default() -> Self {
        Self::Metadata {
            cached: Mutex::new(None),
        }
    }
}

impl Credentials {
    /// A valid access token.
    pub(crate) async fn token(
        &self,
        http: &HttpClient,
        metadata: &Metadata,
        env: &Env,
    ) -> Result<String, Error> {
        let cached = match self {
            Self::Token(token) => return Ok(token.clone()),
            Self::Metadata { cached } => cached,
        };
        if let Some((token, refresh_at)) = lock(cached).as_ref()
            && Instant::now() < *refresh_at
        {
            return Ok(token.clone());
        }
        let fresh = metadata.token(http, env).await?;
        // Without an expiry the token is not reused: better one request more than a stale token.
        let refresh_at = Instant::now()
            + fresh
                .lifetime()
                .map_or(Duration::ZERO, |l| l.saturating_sub(REFRESH_MARGIN));
        *lock(cached) = Some((fresh.access_token.clone(), refresh_at));
        Ok(fresh.access_token)
    }
}

/// The cache, even if a panic elsewhere poisoned the lock (a cached token is never half-written).
fn lock(
    cached: &Mutex<Option<(String, Instant)>>,
) -> std::sync::MutexGuard<'_, Option<(String, Instant)>> {
    cached
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
