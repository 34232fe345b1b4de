//! Resolvers that watch: a cluster's membership as a stream of specs, the current one first,
//! then one per change (feature `watch`).
//!
//! A [`ClusterStream`] yields `Ok(spec)` for the cluster now, then for each spec that differs
//! from the last one emitted (by [`ClusterSpec`]'s equality, so a reordering is no change), and
//! `Err(error)` for a failure it recovers from: a half-written file, a failed poll, an API
//! error. After an `Err` the stream goes on (as kube-runtime's watcher with a back-off); it
//! never ends by itself. Dropping it stops all its work: it spawns no task of its own, a file
//! watcher's thread stops with it, and a Kubernetes watch closes its connections.
//!
//! | source | how |
//! |---|---|
//! | any [`ClusterResolver`] | [`poll`]: `cluster_spec()` every [`interval`](WatchOptions::interval), under a deadline |
//! | a cluster file (`--from file`) | [`file`](file()): file events on its directory (a rename-replace included) and a re-read every interval |
//! | Kubernetes pods (with `kubernetes`) | [`WatchClusterResolver::watch`]: kube-runtime's watcher per label selector; a pod is a member while Running with its IP |
//!
//! The streams run on tokio (timers, and the Kubernetes client's IO): poll them inside a tokio
//! runtime with time enabled.
//!
//! Bursts are coalesced: changes within [`coalesce`](WatchOptions::coalesce) of the first are
//! read as one, so a file rewritten a hundred times in a second ends on its last version with
//! far fewer items than writes.
//!
//! ```
//! use cluster_resolver::watch::{self, WatchOptions};
//! use futures_util::StreamExt;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("watch-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("cluster.json");
//! std::fs::write(&path, r#"{"worker": ["w0:2222"]}"#)?;
//!
//! let mut changes = watch::file(&path, WatchOptions::default());
//! assert_eq!(changes.next().await.unwrap()?.num_tasks("worker")?, 1);
//!
//! // Replaced by a rename, as a launcher writes it atomically.
//! let next = dir.join("cluster.json.tmp");
//! std::fs::write(&next, r#"{"worker": ["w0:2222", "w1:2222"]}"#)?;
//! std::fs::rename(&next, &path)?;
//! let spec = tokio::time::timeout(Duration::from_secs(10), changes.next()).await?.unwrap()?;
//! assert_eq!(spec.num_tasks("worker")?, 2);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Differences from TensorFlow
//!
//! TensorFlow has no watching resolvers: a `ClusterResolver` is asked again (`cluster_spec()`)
//! by whoever wants to know, and nothing tells it the cluster changed.

mod file;
pub(crate) mod latest;
mod options;
mod poll;

use std::sync::Arc;

use cluster_spec::ClusterSpec;
use futures_util::stream::BoxStream;

use crate::ClusterResolver;
pub use crate::error::watch::Error;
pub use file::file;
pub use options::WatchOptions;
pub use poll::poll;

/// A cluster's membership over time: `Ok(spec)` now and at each change, `Err` for a failure
/// the watch recovers from (see the [module docs](self)). `Send` and `'static`: it owns what it
/// needs, and dropping it stops it.
pub type ClusterStream = BoxStream<'static, Result<ClusterSpec, crate::Error>>;

/// A resolver that can report its cluster as it changes: the [`ClusterResolver`] beside it
/// answers "what is the cluster now", this "tell me each time it changes".
///
/// Resolvers whose source can tell (Kubernetes) watch it; the others
/// ([`TfConfigClusterResolver`](crate::TfConfigClusterResolver), Slurm, SageMaker, ...) poll,
/// as [`poll`] does for any resolver.
///
/// ```
/// use std::sync::Arc;
/// use cluster_resolver::{Env, TfConfigClusterResolver, WatchClusterResolver};
/// use cluster_resolver::watch::WatchOptions;
/// use futures_util::StreamExt;
///
/// # async fn run() -> Result<(), cluster_resolver::Error> {
/// let env = Env::from_iter([("TF_CONFIG", r#"{"cluster": {"worker": ["w0:2222"]}}"#)]);
/// let resolver = Arc::new(TfConfigClusterResolver::new(env));
/// let mut changes = resolver.watch(WatchOptions::default());
/// assert_eq!(changes.next().await.unwrap()?.jobs(), ["worker"]);
/// # Ok(())
/// # }
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(run()).unwrap();
/// ```
pub trait WatchClusterResolver: ClusterResolver {
    /// The cluster now, then at each change; see [`ClusterStream`].
    fn watch(self: Arc<Self>, options: WatchOptions) -> ClusterStream;
}

/// Resolvers whose source cannot tell when it changes: they poll.
macro_rules! polled {
    ($($resolver:ty),* $(,)?) => {$(
        impl WatchClusterResolver for $resolver {
            /// Polls [`cluster_spec`](ClusterResolver::cluster_spec) (see [`poll`]).
            fn watch(self: Arc<Self>, options: WatchOptions) -> ClusterStream {
                poll(self, options)
            }
        }
    )*};
}

polled!(
    crate::TfConfigClusterResolver,
    crate::SlurmClusterResolver,
    crate::SageMakerClusterResolver,
    crate::SimpleClusterResolver,
    crate::UnionClusterResolver,
);
#[cfg(feature = "gce")]
polled!(crate::GceClusterResolver, crate::TpuClusterResolver);
