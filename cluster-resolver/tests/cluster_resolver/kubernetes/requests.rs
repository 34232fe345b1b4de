//! The exact requests the resolver makes of the API server: the one-shot listing's, and the
//! watch's (kube-runtime's watcher: a listing, then a watch from its resourceVersion), each
//! checked whole (method, path, every query parameter, every header, the body), so a kube
//! upgrade that changes a call shows here.
//!
//! kube sends no `Accept` header, so the server answers in its default form, JSON; a watch
//! asks for `accept-encoding: identity` (kube-client opts watch streams out of compression).

use std::collections::BTreeMap;

use cluster_resolver::ClusterResolver;
use cluster_resolver::kubernetes::KubernetesClusterResolver;
use http_standin::{HttpServer, Request};

use super::{by_selector, client};

/// A request's query parameters as a map, none given twice, whatever their order.
fn query(request: &Request) -> BTreeMap<&str, &str> {
    pairs(&request.query)
}

/// A request's headers as a map, none given twice.
fn headers(request: &Request) -> BTreeMap<&str, &str> {
    pairs(&request.headers)
}

fn pairs(list: &[(String, String)]) -> BTreeMap<&str, &str> {
    let map: BTreeMap<&str, &str> = list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(map.len(), list.len(), "a name given twice: {list:?}");
    map
}

/// `host:port` of the server, as the `host` header names it.
fn host(server: &HttpServer) -> &str {
    server.url().trim_start_matches("http://")
}

#[tokio::test]
async fn the_listing_asks_for_each_selector_and_nothing_else() {
    let server = HttpServer::start(by_selector).await;
    let resolver = KubernetesClusterResolver::new()
        .with_job("worker", ["job-name=worker-pod"])
        .with_job("ps", ["job-name=ps-pod"])
        .with_namespace("training")
        .with_client(client(&server, "default"));
    resolver.cluster_spec().await.expect("cluster spec");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for (request, selector) in requests
        .iter()
        .zip(["job-name=worker-pod", "job-name=ps-pod"])
    {
        assert_eq!(request.method, "GET");
        assert_eq!(request.path, "/api/v1/namespaces/training/pods");
        // The newest state (no resourceVersion), in one page (no limit).
        assert_eq!(
            query(request),
            BTreeMap::from([("labelSelector", selector)])
        );
        assert_eq!(headers(request), BTreeMap::from([("host", host(&server))]));
        assert!(request.body.is_empty());
    }
    server.stop().await;
}

#[cfg(feature = "watch")]
#[tokio::test]
async fn the_watch_lists_then_watches_from_the_listings_version() {
    use std::sync::Arc;

    use cluster_resolver::WatchClusterResolver;

    use super::api::{Api, Expiry, SELECTOR};
    use super::resume::{next, options, quiet_until_watching};

    let api = Api::start(Vec::new(), 100, Expiry::ErrorEvent).await;
    let resolver = Arc::new(
        KubernetesClusterResolver::new()
            .with_job("worker", [SELECTOR])
            .with_namespace("training")
            .with_client(client(&api.server, "default")),
    );
    let mut changes = resolver.watch(options());
    next(&mut changes).await.expect("the first spec");
    quiet_until_watching(&api, &mut changes, 1).await;

    let requests = api.server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let (list, watch) = (&requests[0], &requests[1]);
    for request in [list, watch] {
        assert_eq!(request.method, "GET");
        assert_eq!(request.path, "/api/v1/namespaces/training/pods");
        assert!(request.body.is_empty());
    }
    // kube-runtime's listing: the newest state, in pages of 500.
    assert_eq!(
        query(list),
        BTreeMap::from([("labelSelector", SELECTOR), ("limit", "500")])
    );
    assert_eq!(headers(list), BTreeMap::from([("host", host(&api.server))]));
    // The watch: from the listing's version, with bookmarks, ended by the server after three
    // quarters of the 30 s request timeout.
    assert_eq!(
        query(watch),
        BTreeMap::from([
            ("watch", "true"),
            ("labelSelector", SELECTOR),
            ("resourceVersion", "100"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "22"),
        ])
    );
    assert_eq!(
        headers(watch),
        BTreeMap::from([("host", host(&api.server)), ("accept-encoding", "identity")])
    );
    drop(changes);
    api.stop().await;
}
