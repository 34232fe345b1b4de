//! Where each cloud's metadata service is: its documented address, or the variable its own
//! SDKs read to move it (a stand-in's, in tests).

use std::collections::BTreeMap;

use hyper::Uri;

use crate::Cloud;

/// GCE's metadata host (`host[:port]`), as Google's client libraries read it.
pub const GCE_METADATA_HOST: &str = "GCE_METADATA_HOST";
/// The older name Google's libraries also read, after [`GCE_METADATA_HOST`].
pub const GCE_METADATA_IP: &str = "GCE_METADATA_IP";
/// EC2's instance metadata service (`http://host[:port]`), as AWS's SDKs read it.
pub const AWS_EC2_METADATA_SERVICE_ENDPOINT: &str = "AWS_EC2_METADATA_SERVICE_ENDPOINT";
/// Azure's Instance Metadata Service (`http://host[:port]`): Azure's SDKs have no such
/// variable, so this one is ours.
pub const TFCLUSTER_AZURE_METADATA_ENDPOINT: &str = "TFCLUSTER_AZURE_METADATA_ENDPOINT";

/// The variables read, each cloud's in the order tried.
pub const VARIABLES: [&str; 4] = [
    GCE_METADATA_HOST,
    GCE_METADATA_IP,
    AWS_EC2_METADATA_SERVICE_ENDPOINT,
    TFCLUSTER_AZURE_METADATA_ENDPOINT,
];

/// An endpoint variable whose value is no usable address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?}: {expected}")]
pub struct EndpointError {
    /// The variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What it should look like.
    pub expected: &'static str,
}

/// The base URL (`http://host[:port]`, no trailing slash) of `cloud`'s metadata service:
/// from its variable in `vars` when set and not empty, else the documented address.
pub(crate) fn base(cloud: Cloud, vars: &BTreeMap<String, String>) -> Result<String, EndpointError> {
    let var = |name: &str| vars.get(name).filter(|v| !v.is_empty());
    match cloud {
        Cloud::Gce => {
            let Some((variable, value)) = [GCE_METADATA_HOST, GCE_METADATA_IP]
                .into_iter()
                .find_map(|name| var(name).map(|v| (name, v)))
            else {
                return Ok("http://metadata.google.internal".to_owned());
            };
            let error = || EndpointError {
                variable,
                value: value.clone(),
                expected: "expected host[:port], such as 169.254.169.254 or 127.0.0.1:8080",
            };
            let uri: Uri = format!("http://{value}/").parse().map_err(|_| error())?;
            match uri.authority() {
                Some(authority) if uri.path() == "/" && authority.as_str() == value => {
                    Ok(format!("http://{authority}"))
                }
                _ => Err(error()),
            }
        }
        Cloud::Aws => url(
            vars,
            AWS_EC2_METADATA_SERVICE_ENDPOINT,
            "http://169.254.169.254",
        ),
        Cloud::Azure => url(
            vars,
            TFCLUSTER_AZURE_METADATA_ENDPOINT,
            "http://169.254.169.254",
        ),
    }
}

/// An `http://host[:port]` URL from `variable`, else `default`.
fn url(
    vars: &BTreeMap<String, String>,
    variable: &'static str,
    default: &str,
) -> Result<String, EndpointError> {
    let Some(value) = vars.get(variable).filter(|v| !v.is_empty()) else {
        return Ok(default.to_owned());
    };
    let error = || EndpointError {
        variable,
        value: value.clone(),
        expected: "expected an http:// URL of a host, such as http://169.254.169.254",
    };
    let uri: Uri = value.parse().map_err(|_| error())?;
    let plain =
        uri.scheme_str() == Some("http") && matches!(uri.path(), "" | "/") && uri.query().is_none();
    match uri.authority() {
        Some(authority) if plain => Ok(format!("http://{authority}")),
        _ => Err(error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_documented_addresses_unless_a_variable_moves_them() {
        let none = vars(&[]);
        assert_eq!(
            base(Cloud::Gce, &none).unwrap(),
            "http://metadata.google.internal"
        );
        assert_eq!(base(Cloud::Aws, &none).unwrap(), "http://169.254.169.254");
        assert_eq!(base(Cloud::Azure, &none).unwrap(), "http://169.254.169.254");
        let set = vars(&[
            (GCE_METADATA_IP, "10.0.0.9"),
            (GCE_METADATA_HOST, "127.0.0.1:8080"),
            (AWS_EC2_METADATA_SERVICE_ENDPOINT, "http://[::1]:1338/"),
            (TFCLUSTER_AZURE_METADATA_ENDPOINT, "http://127.0.0.1:9"),
        ]);
        assert_eq!(base(Cloud::Gce, &set).unwrap(), "http://127.0.0.1:8080");
        assert_eq!(base(Cloud::Aws, &set).unwrap(), "http://[::1]:1338");
        assert_eq!(base(Cloud::Azure, &set).unwrap(), "http://127.0.0.1:9");
        let ip = vars(&[(GCE_METADATA_IP, "169.254.169.254")]);
        assert_eq!(base(Cloud::Gce, &ip).unwrap(), "http://169.254.169.254");
    }

    #[test]
    fn a_variable_that_does_not_parse_is_named_with_its_value() {
        for (name, value, cloud) in [
            (GCE_METADATA_HOST, "http://x", Cloud::Gce),
            (GCE_METADATA_HOST, "a b", Cloud::Gce),
            (GCE_METADATA_HOST, "h:1/path", Cloud::Gce),
            (
                AWS_EC2_METADATA_SERVICE_ENDPOINT,
                "169.254.169.254",
                Cloud::Aws,
            ),
            (AWS_EC2_METADATA_SERVICE_ENDPOINT, "https://x", Cloud::Aws),
            (
                TFCLUSTER_AZURE_METADATA_ENDPOINT,
                "http://x/metadata",
                Cloud::Azure,
            ),
        ] {
            let err = base(cloud, &vars(&[(name, value)])).unwrap_err();
            assert_eq!(err.variable, name);
            assert!(
                err.to_string()
                    .starts_with(&format!("{name}={value:?}: expected")),
                "{err}"
            );
        }
    }
}
