//! The Kubernetes resolver as a [`WatchClusterResolver`]: kube-runtime's watcher on the pods of
//! each label selector, a reflector store per selector, and the spec made from the stores as
//! [`cluster_spec`](crate::ClusterResolver::cluster_spec) makes it from a listing.

use std::sync::Arc;
use std::time::Duration;

use cluster_spec::ClusterSpec;
use futures_util::stream::{self, BoxStream, SelectAll, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use tokio::time::Instant;

use super::pods::pod_tasks;
use super::{KubernetesClusterResolver, Listing, Members};
use crate::backoff::Backoff;
use crate::watch::{ClusterStream, WatchClusterResolver, WatchOptions, latest::Latest};

impl WatchClusterResolver for KubernetesClusterResolver {
    /// Watches the pods of every selector (kube-runtime's watcher: a listing, then a watch
    /// from its resourceVersion, listing again when the watch expires), in the resolver's
    /// namespace. A member is a selected pod in phase Running with its IP; the others are
    /// left out rather than failing, since pods come and go while a cluster runs. Events
    /// within [`coalesce`](WatchOptions::coalesce) of the first are one change (a rollout
    /// moves many pods at once). Nothing is emitted before every selector has been listed.
    ///
    /// A failed watch call is an `Err` item, and the watcher retries it after a back-off
    /// with the options' bounds; a pod matched by two selectors is an `Err` item until it
    /// is not. A watch whose resourceVersion the server no longer has (`410 Expired`, as an
    /// `ERROR` event or as the answer to the watch request) is no error: the pods are listed
    /// again and the spec follows that listing (a pod deleted meanwhile leaves it); only a
    /// failure of the new listing is an `Err` item. Each watch asks the server to end it
    /// within three quarters of
    /// [`with_request_timeout`](KubernetesClusterResolver::with_request_timeout), so an idle
    /// watch is renewed before a client read deadline can fail it; every call is bounded by
    /// the client's read deadline (the request timeout for a client configured here; an
    /// injected client keeps its own).
    fn watch(self: Arc<Self>, options: WatchOptions) -> ClusterStream {
        let watch = PodWatch {
            backoff: options.backoff(),
            relists: options.backoff(),
            resolver: self,
            options,
            running: None,
            latest: Latest::default(),
            pending: None,
            retrying: false,
        };
        Box::pin(stream::unfold(watch, |mut watch| async move {
            let item = watch.next().await;
            Some((item, watch))
        }))
    }
}

/// HTTP 410 Gone: the `code` of the `Expired` status a server gives a resourceVersion older
/// than its watch history.
const GONE: u16 = 410;

/// One selector's watch events, tagged with the selector's place in the resolver's jobs.
type Tagged = (usize, watcher::Result<Event<Pod>>);

/// The state of one watch stream.
struct PodWatch {
    resolver: Arc<KubernetesClusterResolver>,
    options: WatchOptions,
    /// The watchers, once the client is configured.
    running: Option<Watchers>,
    latest: Latest,
    /// A failure seen while coalescing, reported after the spec of that burst.
    pending: Option<crate::Error>,
    /// Paces retries of configuring the client.
    backoff: Backoff,
    retrying: bool,
    /// Paces listing again after a watch request answered `410 Expired`; reset once a spec is
    /// news, so a server that answers every watch so does not get a listing loop.
    relists: Backoff,
}

/// What one watcher event means for the watch, beyond what the stores hold.
#[derive(Debug, PartialEq, Eq)]
enum Noted {
    /// Nothing more.
    Seen,
    /// The server answered a watch request `410 Expired`: kube-runtime's watcher would ask
    /// again from the same resourceVersion forever, so the watchers start again from a listing.
    Expired,
}

/// The watchers of every selector and what they have seen.
struct Watchers {
    namespace: String,
    /// `(job, selector)` in the resolver's order, with its pods.
    selectors: Vec<(String, String, Store<Pod>)>,
    /// Whether each selector's first listing is complete.
    listed: Vec<bool>,
    events: SelectAll<BoxStream<'static, Tagged>>,
}

impl PodWatch {
    /// Waits for the next burst of pod events whose spec (or failure) is news.
    async fn next(&mut self) -> Result<ClusterSpec, crate::Error> {
        loop {
            if let Some(error) = self.pending.take() {
                return Err(error);
            }
            let Some(watchers) = self.running.as_mut() else {
                self.running = Some(self.start().await?);
                continue;
            };
            let mut noted = match watchers.events.next().await {
                Some(event) => watchers.note(event)?,
                // The watchers never end; if they did, start again.
                None => {
                    self.running = None;
                    continue;
                }
            };
            let until = Instant::now() + self.options.coalesce;
            while noted == Noted::Seen
                && let Ok(Some(event)) =
                    tokio::time::timeout_at(until, watchers.events.next()).await
            {
                match watchers.note(event) {
                    Ok(seen) => noted = seen,
                    Err(error) => {
                        self.pending = Some(error);
                        break;
                    }
                }
            }
            if noted == Noted::Expired {
                // New watchers list every selector again; no spec comes before all are listed.
                self.running = None;
                tokio::time::sleep(self.relists.pause(Duration::MAX)).await;
                continue;
            }
            if !watchers.listed.iter().all(|listed| *listed) {
                continue;
            }
            let spec = self.resolver.spec_of_stores(watchers)?;
            if let Some(spec) = self.latest.changed(spec) {
                self.relists.reset();
                return Ok(spec);
            }
        }
    }

    /// Configures the client (after a back-off pause when this failed before) and starts a
    /// watcher per selector.
    async fn start(&mut self) -> Result<Watchers, crate::Error> {
        if self.retrying {
            tokio::time::sleep(self.backoff.pause(Duration::MAX)).await;
        }
        self.retrying = true;
        let resolver = &self.resolver;
        let client = resolver.client.client(resolver.request_timeout).await?;
        self.retrying = false;
        self.backoff.reset();
        let namespace = resolver.namespace_of(&client);
        let api: Api<Pod> = Api::namespaced(client, &namespace);
        // The server ends each watch before a client read deadline of request_timeout could.
        let server_timeout = u32::try_from(resolver.request_timeout.as_secs() * 3 / 4)
            .unwrap_or(u32::MAX)
            .max(1);
        let mut selectors = Vec::new();
        let mut events = SelectAll::new();
        for (job, job_selectors) in &resolver.jobs {
            for selector in job_selectors {
                let (store, writer) = reflector::store::<Pod>();
                let config = watcher::Config::default()
                    .labels(selector)
                    .timeout(server_timeout);
                let index = selectors.len();
                events.push(
                    watcher::watcher(api.clone(), config)
                        .backoff(self.options.backoff())
                        .reflect(writer)
                        .map(move |event| (index, event))
                        .boxed(),
                );
                selectors.push((job.clone(), selector.clone(), store));
            }
        }
        Ok(Watchers {
            namespace,
            listed: vec![false; selectors.len()],
            selectors,
            events,
        })
    }
}

impl Watchers {
    /// Records that a selector's listing is complete, or turns a watcher's failure into the
    /// crate's error naming the namespace and selector. An expired resourceVersion is no
    /// failure: in an `ERROR` event the watcher lists again by itself; as the answer to the
    /// watch request it is [`Noted::Expired`].
    fn note(&mut self, (index, event): Tagged) -> Result<Noted, crate::Error> {
        match event {
            Ok(Event::InitDone) => {
                if let Some(listed) = self.listed.get_mut(index) {
                    *listed = true;
                }
                Ok(Noted::Seen)
            }
            Ok(_) => Ok(Noted::Seen),
            Err(watcher::Error::WatchError(status)) if status.code == GONE => Ok(Noted::Seen),
            Err(watcher::Error::WatchStartFailed(kube::Error::Api(status)))
                if status.code == GONE =>
            {
                Ok(Noted::Expired)
            }
            Err(source) => {
                let selector = self.selectors.get(index).map_or("", |s| s.1.as_str());
                Err(crate::Error::Request {
                    operation: format!(
                        "watching pods in namespace {:?} with label selector {selector:?}",
                        self.namespace
                    ),
                    source: Box::new(source),
                })
            }
        }
    }
}

impl KubernetesClusterResolver {
    /// The spec of the pods the stores hold now: running pods with their IP only.
    fn spec_of_stores(&self, watchers: &Watchers) -> Result<ClusterSpec, crate::Error> {
        let listings: Vec<Listing<'_>> = watchers
            .selectors
            .iter()
            .map(|(job, selector, store)| Listing {
                job,
                selector,
                tasks: pod_tasks(
                    store.state().iter().map(|pod| Pod::clone(pod)).collect(),
                    self.address,
                    self.port,
                ),
            })
            .collect();
        self.spec_of(&watchers.namespace, &listings, Members::RunningOnly)
    }
}

/// kube-runtime's watcher backs off with the watch options' bounds.
impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.pause(Duration::MAX))
    }
}

impl kube::runtime::utils::Backoff for Backoff {
    fn reset(&mut self) {
        Backoff::reset(self);
    }
}
