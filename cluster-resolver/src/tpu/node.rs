//! A Cloud TPU node (`GET https://tpu.googleapis.com/v1/projects/{p}/locations/{zone}/nodes/{tpu}`)
//! and the checks TensorFlow's Cloud TPU client makes on it.

use serde::Deserialize;

use super::Error as TpuError;
use crate::Error;

/// The part of a `Node` document the resolver reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Node {
    /// `v3-8`, `v4-32`, …
    pub(super) accelerator_type: Option<String>,
    /// `READY`, `CREATING`, `PREEMPTED`, …
    pub(super) state: Option<String>,
    /// `HEALTHY`, `UNHEALTHY_MAINTENANCE`, …; absent when unspecified.
    pub(super) health: Option<String>,
    /// One per host. TensorFlow uses them whenever the field is present, even empty.
    pub(super) network_endpoints: Option<Vec<NetworkEndpoint>>,
    /// Deprecated single-host fields, TensorFlow's fallback without `networkEndpoints`.
    pub(super) ip_address: Option<String>,
    pub(super) port: Option<Port>,
}

/// `NetworkEndpoint`: a host of the node.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NetworkEndpoint {
    pub(super) ip_address: Option<String>,
    pub(super) port: Option<Port>,
}

/// A port: a JSON number in `networkEndpoints[]`, a string in the deprecated top-level field.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Port {
    Number(u64),
    Text(String),
}

impl Port {
    fn text(&self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(s) => s.clone(),
        }
    }
}

impl Node {
    /// `ipAddress:port` of each host, after TensorFlow's check that the node is `READY` (and,
    /// if asked, `HEALTHY`).
    pub(super) fn endpoints(&self, tpu: &str, require_healthy: bool) -> Result<Vec<String>, Error> {
        let state = self.state.as_deref().unwrap_or("None");
        if state != "READY" {
            return Err(TpuError::NotReady {
                tpu: tpu.to_owned(),
                state: state.to_owned(),
            }
            .into());
        }
        let health = self.health.as_deref().unwrap_or("HEALTH_UNSPECIFIED");
        if require_healthy && health != "HEALTHY" {
            return Err(TpuError::Unhealthy {
                tpu: tpu.to_owned(),
                health: health.to_owned(),
            }
            .into());
        }
        let invalid = |reason: String| Error::InvalidResponse {
            operation: format!(
                "looking up TPU {}",
                cluster_spec::__private::quote::quote(tpu, 0)
            ),
            reason,
        };
        let address = |ip: &Option<String>, port: &Option<Port>, what: &str| {
            let ip = ip
                .as_deref()
                .filter(|ip| !ip.is_empty())
                .ok_or_else(|| invalid(format!("{what} has no ipAddress")))?;
            let port = port
                .as_ref()
                .map(Port::text)
                .ok_or_else(|| invalid(format!("{what} has no port")))?;
            Ok(if ip.contains(':') {
                format!("[{ip}]:{port}")
            } else {
                format!("{ip}:{port}")
            })
        };
        match &self.network_endpoints {
            Some(endpoints) => endpoints
                .iter()
                .enumerate()
                .map(|(i, e)| address(&e.ip_address, &e.port, &format!("networkEndpoints[{i}]")))
                .collect(),
            None => Ok(vec![address(&self.ip_address, &self.port, "the node")?]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: &str) -> Node {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn endpoints_of_a_ready_node() {
        let n = node(
            r#"{"state": "READY", "networkEndpoints": [
                {"ipAddress": "10.240.1.2", "port": 8470}, {"ipAddress": "10.240.1.3", "port": 8470}]}"#,
        );
        assert_eq!(
            n.endpoints("t", false).unwrap(),
            ["10.240.1.2:8470", "10.240.1.3:8470"]
        );
    }

    #[test]
    fn deprecated_single_endpoint_fallback() {
        let n = node(r#"{"state": "READY", "ipAddress": "10.240.1.2", "port": "8470"}"#);
        assert_eq!(n.endpoints("t", false).unwrap(), ["10.240.1.2:8470"]);
    }

    #[test]
    fn not_ready_uses_tensorflows_sentence() {
        let n = node(r#"{"state": "CREATING"}"#);
        assert_eq!(
            n.endpoints("my-tpu", false).unwrap_err().to_string(),
            "TPU \"my-tpu\" is not yet ready; state: \"CREATING\""
        );
    }

    #[test]
    fn health_checked_only_when_asked() {
        let n = node(
            r#"{"state": "READY", "health": "UNHEALTHY_MAINTENANCE", "networkEndpoints": [{"ipAddress": "10.0.0.2", "port": 8470}]}"#,
        );
        assert!(n.endpoints("t", false).is_ok());
        assert_eq!(
            n.endpoints("t", true).unwrap_err().to_string(),
            "TPU \"t\" is not healthy; health: \"UNHEALTHY_MAINTENANCE\""
        );
    }
}
