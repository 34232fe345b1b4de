//! [`file`]: a cluster file followed through file events on its directory, and re-read at an
//! interval in case an event was missed.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster_spec::ClusterSpec;
use futures_util::stream;
use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::latest::Latest;
use super::{ClusterStream, Error as WatchError, WatchOptions};
use crate::{Error, cluster_file};

/// Follows the cluster file at `path` ([`cluster_file::parse`]: a `TF_CONFIG` document or a
/// bare cluster spec): the first item is its spec now (or why there is none), then one item
/// per version whose spec differs from the last one emitted.
///
/// The file's directory is watched (so a file replaced by a rename, as editors and atomic
/// writers do, is seen as well as one rewritten in place, and a Kubernetes ConfigMap volume's
/// `..data` symlink swap too), and the file
/// is also re-read every [`interval`](WatchOptions::interval) in case an event was missed.
/// Events within [`coalesce`](WatchOptions::coalesce) of the first are one burst, after
/// which the file is read once, so a burst of rewrites ends on the last version with at most
/// one item per window. A version that cannot be read or holds no valid cluster (half
/// written) is an `Err` item ([`watch::Error`](WatchError)`::ReadFile`/`InvalidFile`); the
/// last good spec stays, and the same content is not reported twice.
///
/// Needs a tokio runtime with timers. Dropping the stream stops the file watcher's thread.
pub fn file(path: impl Into<PathBuf>, options: WatchOptions) -> ClusterStream {
    let path = path.into();
    let (sender, events) = mpsc::unbounded_channel();
    let (watcher, setup_error) = match watch_directory(&path, options.interval, sender) {
        Ok(watcher) => (Some(watcher), None),
        Err(e) => (None, Some(e)),
    };
    let follower = FileFollower {
        path,
        options,
        events: watcher.is_some().then_some(events),
        _watcher: watcher,
        setup_error,
        latest: Latest::default(),
        last_read: None,
        started: false,
    };
    Box::pin(stream::unfold(follower, |mut follower| async move {
        let item = follower.next().await;
        Some((item, follower))
    }))
}

/// The state of one [`file`] stream.
struct FileFollower {
    path: PathBuf,
    options: WatchOptions,
    /// One message per relevant file event; `None` without a watcher.
    events: Option<mpsc::UnboundedReceiver<()>>,
    /// Kept for its thread, which sends `events`, and stops when this is dropped.
    _watcher: Option<RecommendedWatcher>,
    /// Why there are no file events, reported after the first spec.
    setup_error: Option<WatchError>,
    latest: Latest,
    /// The content last read (or the kind of error it gave), so a version is reported once.
    last_read: Option<Result<Vec<u8>, io::ErrorKind>>,
    started: bool,
}

impl FileFollower {
    /// Waits for the next version whose spec (or error) is news.
    async fn next(&mut self) -> Result<ClusterSpec, Error> {
        loop {
            if self.started {
                if let Some(error) = self.setup_error.take() {
                    return Err(error.into());
                }
                self.wait_for_change().await;
            }
            self.started = true;
            if let Some(item) = self.read().await {
                return item;
            }
        }
    }

    /// Until a burst of file events has settled, or the re-read interval has passed.
    async fn wait_for_change(&mut self) {
        let interval = self.options.interval;
        let Some(events) = self.events.as_mut() else {
            tokio::time::sleep(interval).await;
            return;
        };
        tokio::select! {
            event = events.recv() => {
                if event.is_none() {
                    // The watcher's thread is gone: re-reading at the interval is all that is left.
                    self.events = None;
                    return;
                }
                tokio::time::sleep(self.options.coalesce).await;
                while events.try_recv().is_ok() {}
            }
            () = tokio::time::sleep(interval) => {}
        }
    }

    /// Reads the file once: `None` when its content (or its error) is the one last read, or
    /// its spec the one last emitted.
    async fn read(&mut self) -> Option<Result<ClusterSpec, Error>> {
        let timeout = self.options.call_timeout;
        let read = match tokio::time::timeout(timeout, tokio::fs::read(&self.path)).await {
            Ok(read) => read,
            Err(_) => {
                self.last_read = None;
                return Some(Err(Error::Timeout {
                    operation: format!("reading cluster file {}", self.path.display()),
                    timeout,
                }));
            }
        };
        let seen = read.as_ref().map(Clone::clone).map_err(io::Error::kind);
        if self.last_read.as_ref() == Some(&seen) {
            return None;
        }
        self.last_read = Some(seen);
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(source) => {
                let path = self.path.clone();
                return Some(Err(WatchError::ReadFile { path, source }.into()));
            }
        };
        match parse(&bytes) {
            Ok(spec) => self.latest.changed(spec).map(Ok),
            Err(source) => Some(Err(WatchError::InvalidFile {
                path: self.path.clone(),
                source: Box::new(source),
            }
            .into())),
        }
    }
}

/// The cluster of a file's content. Bytes that are not UTF-8 become U+FFFD, which the JSON
/// parsers reject wherever it matters (names, addresses).
fn parse(bytes: &[u8]) -> Result<ClusterSpec, Error> {
    let text = String::from_utf8_lossy(bytes);
    Ok(cluster_file::parse(&text)?.cluster)
}

/// Whether `file` is one of the names Kubernetes' atomic writer swaps to update a ConfigMap or
/// Secret volume (`..data`, `..data_tmp`, `..2026_01_02_03_04_05.123`): there the watched name
/// is a symlink through `..data`, and only `..data` is renamed when the content changes.
fn is_atomic_writer(file: &std::ffi::OsStr) -> bool {
    file.as_encoded_bytes().starts_with(b"..")
}

/// Starts a watcher on `path`'s directory that sends `()` for each event touching the file
/// (or that may have: a queue overflow).
fn watch_directory(
    path: &Path,
    interval: Duration,
    sender: mpsc::UnboundedSender<()>,
) -> Result<RecommendedWatcher, WatchError> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let name: Option<OsString> = path.file_name().map(ToOwned::to_owned);
    let notify_error = |source| WatchError::Notify {
        directory: directory.clone(),
        path: path.to_owned(),
        interval,
        source,
    };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        let relevant = match &event {
            Ok(event) => {
                event.need_rescan()
                    || event.paths.iter().any(|p| match p.file_name() {
                        Some(file) => Some(file) == name.as_deref() || is_atomic_writer(file),
                        None => false,
                    })
            }
            // An error from the watcher's thread: read again, to be safe.
            Err(_) => true,
        };
        if relevant {
            // The stream is gone when this fails, and the watcher with it.
            let _ = sender.send(());
        }
    })
    .map_err(notify_error)?;
    watcher
        .watch(&directory, RecursiveMode::NonRecursive)
        .map_err(notify_error)?;
    Ok(watcher)
}
