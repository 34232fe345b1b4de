//! Authorized JSON calls to a Google API: the part the GCE and Cloud TPU resolvers share, and
//! [`google_api_methods!`], the builder methods that configure it, written once for both.

use std::time::Duration;

use hyper::Method;
use serde::de::DeserializeOwned;

use super::auth::Credentials;
use super::http::HttpClient;
use super::metadata::Metadata;
use crate::{Env, Error};

/// The default deadline of each request.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP client, where tokens come from, and the environment that locates the metadata
/// server.
pub(crate) struct GoogleApi {
    pub(crate) http: HttpClient,
    pub(crate) metadata: Metadata,
    credentials: Credentials,
    pub(crate) env: Env,
}

impl GoogleApi {
    /// Metadata-server credentials, the process environment, [`DEFAULT_TIMEOUT`].
    pub(crate) fn new() -> Self {
        Self {
            http: HttpClient::new(DEFAULT_TIMEOUT),
            metadata: Metadata::default(),
            credentials: Credentials::default(),
            env: Env::process(),
        }
    }

    /// Uses `token` instead of the metadata server's.
    pub(crate) fn set_token(&mut self, token: String) {
        self.credentials = Credentials::Token(token);
    }

    /// Sets the deadline of each request.
    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.http = HttpClient::new(timeout);
    }

    /// A `method` request to `url` with `Authorization: Bearer <token>`, decoded as `T`.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, Error> {
        let token = self
            .credentials
            .token(&self.http, &self.metadata, &self.env)
            .await?;
        let authorization = format!("Bearer {token}");
        self.http
            .json(method, url, &[("authorization", &authorization)], body)
            .await
    }

    /// A metadata value of this VM, e.g. `project/project-id`.
    pub(crate) async fn metadata_value(&self, path: &str) -> Result<String, Error> {
        self.metadata.value(&self.http, &self.env, path).await
    }
}

impl std::fmt::Debug for GoogleApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: say where it comes from, never what it is.
        let credentials = match self.credentials {
            Credentials::Metadata { .. } => "metadata server",
            Credentials::Token(_) => "given token",
        };
        f.debug_struct("GoogleApi")
            .field("timeout", &self.http.timeout())
            .field("metadata", &self.metadata)
            .field("credentials", &credentials)
            .finish_non_exhaustive()
    }
}

/// The builder methods over a resolver's field `api: GoogleApi`, generated into its `impl`
/// block as inherent methods (so callers import nothing). `$env_doc` says which variables the
/// resolver reads from the [`Env`] given to `with_env`, which is all that differs.
macro_rules! google_api_methods {
    ($env_doc:literal) => {
        /// Uses `token` as the bearer token instead of asking the metadata server.
        pub fn with_access_token(mut self, token: impl Into<String>) -> Self {
            self.api.set_token(token.into());
            self
        }

        /// Reaches the metadata server at `base` (e.g. `http://127.0.0.1:8080`) instead of
        /// `GCE_METADATA_HOST` or `metadata.google.internal`.
        pub fn with_metadata_url(mut self, base: impl Into<String>) -> Self {
            self.api.metadata.set_base(base);
            self
        }

        /// Sets the deadline of each request (30 s by default).
        pub fn with_request_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.api.set_timeout(timeout);
            self
        }

        #[doc = $env_doc]
        pub fn with_env(mut self, env: $crate::Env) -> Self {
            self.api.env = env;
            self
        }
    };
}

pub(crate) use google_api_methods;
