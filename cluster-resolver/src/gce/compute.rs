//! The two Compute Engine API calls the resolver makes, as TensorFlow's: `instanceGroups.listInstances`
//! (every page) and `instances.get`.

use std::collections::HashSet;

use hyper::Method;
use serde::Deserialize;

use super::api::GoogleApi;
use super::url::escape;
use crate::Error;

/// A bound on pages, against a server that keeps handing out page tokens (500 instances a page
/// by default, so far beyond any real group).
const MAX_PAGES: usize = 10_000;

/// One page of `instanceGroups.listInstances` (`compute#instanceGroupsListInstances`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListInstancesPage {
    /// Absent when the group (or the page) is empty.
    #[serde(default)]
    items: Vec<GroupInstance>,
    next_page_token: Option<String>,
}

/// `InstanceWithNamedPorts`: the instance's URL and status.
#[derive(Debug, Deserialize)]
struct GroupInstance {
    instance: String,
    status: Option<String>,
}

/// The part of a `compute#instance` the resolver reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instance {
    #[serde(default)]
    network_interfaces: Vec<NetworkInterface>,
}

#[derive(Debug, Deserialize)]
struct NetworkInterface {
    #[serde(rename = "networkIP")]
    network_ip: Option<String>,
}

/// An instance group and the API base URL it is reached at.
#[derive(Debug, Clone)]
pub(super) struct Group<'a> {
    pub(super) compute_url: &'a str,
    pub(super) project: &'a str,
    pub(super) zone: &'a str,
    pub(super) name: &'a str,
}

impl Group<'_> {
    fn zone_url(&self) -> String {
        format!(
            "{}/projects/{}/zones/{}",
            self.compute_url,
            escape(self.project),
            escape(self.zone)
        )
    }
}

/// The names of the group's RUNNING instances, from every page of
/// `POST …/instanceGroups/{group}/listInstances?orderBy=name` with body
/// `{"instanceState": "RUNNING"}` (TensorFlow's request).
pub(super) async fn running_instances(
    api: &GoogleApi,
    group: &Group<'_>,
) -> Result<Vec<String>, Error> {
    let url = format!(
        "{}/instanceGroups/{}/listInstances?orderBy=name",
        group.zone_url(),
        escape(group.name)
    );
    let body = serde_json::json!({ "instanceState": "RUNNING" });
    let mut names = Vec::new();
    let mut seen_tokens = HashSet::new();
    let mut page_url = url.clone();
    for _ in 0..MAX_PAGES {
        let page: ListInstancesPage = api.call(Method::POST, &page_url, Some(&body)).await?;
        for item in page.items {
            // The request asks for RUNNING only; an item saying otherwise is skipped all the same.
            if item.status.as_deref().is_some_and(|s| s != "RUNNING") {
                continue;
            }
            names.push(instance_name(&page_url, &item.instance)?);
        }
        match page.next_page_token.filter(|t| !t.is_empty()) {
            None => return Ok(names),
            Some(token) if !seen_tokens.insert(token.clone()) => {
                return Err(Error::InvalidResponse {
                    operation: format!("POST {page_url}"),
                    reason: format!(
                        "nextPageToken {} was already returned: the listing loops",
                        cluster_spec::__private::quote::quote(&token, 0)
                    ),
                });
            }
            Some(token) => page_url = format!("{url}&pageToken={}", escape(&token)),
        }
    }
    Err(Error::InvalidResponse {
        operation: format!("POST {url}"),
        reason: format!("more than {MAX_PAGES} pages"),
    })
}

/// The last path segment of an instance URL (`…/zones/z/instances/vm-1` → `vm-1`), as
/// TensorFlow takes it.
fn instance_name(page_url: &str, instance_url: &str) -> Result<String, Error> {
    match instance_url.rsplit('/').next() {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(Error::InvalidResponse {
            operation: format!("POST {page_url}"),
            reason: format!(
                "item with instance URL {}, which names no instance",
                cluster_spec::__private::quote::quote(instance_url, 0)
            ),
        }),
    }
}

/// `networkInterfaces[0].networkIP` of `GET …/zones/{zone}/instances/{instance}`.
pub(super) async fn network_ip(
    api: &GoogleApi,
    group: &Group<'_>,
    instance: &str,
) -> Result<String, Error> {
    let url = format!("{}/instances/{}", group.zone_url(), escape(instance));
    let details: Instance = api.call(Method::GET, &url, None).await?;
    details
        .network_interfaces
        .into_iter()
        .next()
        .and_then(|nic| nic.network_ip)
        .filter(|ip| !ip.is_empty())
        .ok_or_else(|| Error::InstanceWithoutIp {
            group: group.name.to_owned(),
            instance: instance.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names_are_the_last_segment() {
        let url = "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/tf-worker-1";
        assert_eq!(instance_name("u", url).unwrap(), "tf-worker-1");
        assert!(instance_name("u", "https://x/instances/").is_err());
    }

    #[test]
    fn empty_pages_have_no_items_field() {
        let page: ListInstancesPage = serde_json::from_str(
            r#"{"kind": "compute#instanceGroupsListInstances", "id": "1", "selfLink": "x"}"#,
        )
        .unwrap();
        assert!(page.items.is_empty() && page.next_page_token.is_none());
    }
}
