//! [`poll`]: any resolver followed by calling `cluster_spec()` at an interval.

use std::sync::Arc;
use std::time::Duration;

use cluster_spec::ClusterSpec;
use futures_util::stream;

use super::latest::Latest;
use super::{ClusterStream, WatchOptions};
use crate::backoff::Backoff;
use crate::{ClusterResolver, Error};

/// Follows `resolver` by calling [`cluster_spec`](ClusterResolver::cluster_spec) every
/// [`interval`](WatchOptions::interval), each call under
/// [`call_timeout`](WatchOptions::call_timeout): the first item is the current spec (or why
/// there is none), then one item per spec that differs from the last one emitted. A failed
/// or timed-out call is an `Err` item, and polling goes on after a back-off pause.
///
/// For sources that cannot tell when they change (environment variables, Slurm, SageMaker,
/// GCE). Dropping the stream stops it: it runs no task of its own.
///
/// ```
/// use std::sync::Arc;
/// use cluster_resolver::SimpleClusterResolver;
/// use cluster_resolver::watch::{self, WatchOptions};
/// use cluster_spec::ClusterSpec;
/// use futures_util::StreamExt;
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let spec = ClusterSpec::builder().job("worker", ["w0:2222"]).build()?;
/// let resolver = Arc::new(SimpleClusterResolver::new(spec.clone()));
/// let mut changes = watch::poll(resolver, WatchOptions::default());
/// assert_eq!(changes.next().await.unwrap()?, spec);
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(run()).unwrap();
/// ```
pub fn poll<R>(resolver: Arc<R>, options: WatchOptions) -> ClusterStream
where
    R: ClusterResolver + ?Sized + 'static,
{
    let poller = Poller {
        backoff: options.backoff(),
        resolver,
        options,
        latest: Latest::default(),
        pause: None,
    };
    Box::pin(stream::unfold(poller, |mut poller| async move {
        let item = poller.next().await;
        Some((item, poller))
    }))
}

/// The state of one [`poll`] stream.
struct Poller<R: ?Sized> {
    resolver: Arc<R>,
    options: WatchOptions,
    latest: Latest,
    backoff: Backoff,
    /// The wait before the next call; `None` before the first.
    pause: Option<Duration>,
}

impl<R: ClusterResolver + ?Sized> Poller<R> {
    /// Calls the resolver until its spec changes or a call fails.
    async fn next(&mut self) -> Result<ClusterSpec, Error> {
        loop {
            if let Some(pause) = self.pause {
                tokio::time::sleep(pause).await;
            }
            let timeout = self.options.call_timeout;
            let result = tokio::time::timeout(timeout, self.resolver.cluster_spec()).await;
            let result = result.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    operation: "polling the resolver (cluster_spec())".to_owned(),
                    timeout,
                })
            });
            match result {
                Ok(spec) => {
                    self.backoff.reset();
                    self.pause = Some(self.options.interval);
                    if let Some(spec) = self.latest.changed(spec) {
                        return Ok(spec);
                    }
                }
                Err(e) => {
                    self.pause = Some(self.backoff.pause(Duration::MAX));
                    return Err(e);
                }
            }
        }
    }
}
