//! The GCE metadata server: this VM's project, zone and service-account access token.

use std::time::Duration;

use serde::Deserialize;

use super::http::HttpClient;
use super::url::trim_base;
use crate::{Env, Error};

/// The metadata server's host name on every GCE VM (and GKE node, Cloud TPU VM).
pub(crate) const METADATA_HOST: &str = "metadata.google.internal";

/// Where the metadata server is: a base URL given explicitly, else `http://` + the host in
/// `GCE_METADATA_HOST`, else in `GCE_METADATA_IP`, else [`METADATA_HOST`] (the variables
/// TensorFlow's Cloud TPU client and Google's auth libraries read).
#[derive(Debug, Clone, Default)]
pub(crate) struct Metadata {
    base: Option<String>,
}

/// The token endpoint's answer.
#[derive(Debug, Deserialize)]
pub(crate) struct AccessToken {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) expires_in: Option<u64>,
}

impl AccessToken {
    /// How long the token stays valid, if the server said.
    pub(crate) fn lifetime(&self) -> Option<Duration> {
        self.expires_in.map(Duration::from_secs)
    }
}

impl Metadata {
    /// Uses `base` (e.g. `http://127.0.0.1:8080`) instead of the environment's.
    pub(crate) fn set_base(&mut self, base: impl Into<String>) {
        self.base = Some(trim_base(&base.into()));
    }

    fn base(&self, env: &Env) -> String {
        if let Some(base) = &self.base {
            return base.clone();
        }
        let host = ["GCE_METADATA_HOST", "GCE_METADATA_IP"]
            .iter()
            // A host that is not UTF-8 cannot be in a URL; the default is used instead.
            .find_map(|name| env.get(name).ok().flatten().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| METADATA_HOST.to_owned());
        format!("http://{host}")
    }

    /// `computeMetadata/v1/<path>` as text, e.g. `project/project-id`.
    pub(crate) async fn value(
        &self,
        http: &HttpClient,
        env: &Env,
        path: &str,
    ) -> Result<String, Error> {
        let url = format!("{}/computeMetadata/v1/{path}", self.base(env));
        http.text(&url, &[("metadata-flavor", "Google")]).await
    }

    /// An access token of the VM's default service account.
    pub(crate) async fn token(&self, http: &HttpClient, env: &Env) -> Result<AccessToken, Error> {
        let url = format!(
            "{}/computeMetadata/v1/instance/service-accounts/default/token",
            self.base(env)
        );
        http.json(
            hyper::Method::GET,
            &url,
            &[("metadata-flavor", "Google")],
            None,
        )
        .await
    }
}
