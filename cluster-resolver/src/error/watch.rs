//! [`Error`]: why a watch could not read or follow its source this time. A watch reports
//! these as items of its stream and goes on.

use std::path::PathBuf;
use std::time::Duration;

/// What a watch ([`crate::watch`]) reports and then recovers from: a file that cannot be read
/// or holds no valid cluster (an intermediate version), or file events that cannot be had.
/// A polled resolver's own failures are reported as that resolver's errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The cluster file cannot be read (missing, unreadable); the last good spec stays.
    #[error("cannot read cluster file {}", .path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// This version of the cluster file holds no valid cluster (e.g. half written); the last
    /// good spec stays and the next version is read.
    #[error("cluster file {} holds no valid cluster", .path.display())]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        #[source]
        source: Box<crate::Error>,
    },
    /// File events cannot be had for the file's directory, so the file is only re-read every
    /// `interval`.
    #[error(
        "cannot watch directory {} for changes of {}; re-reading it every {interval:?} instead",
        .directory.display(),
        .path.display()
    )]
    Notify {
        /// The directory watched.
        directory: PathBuf,
        /// The file.
        path: PathBuf,
        /// How often the file is re-read instead.
        interval: Duration,
        /// Why (inotify's watch limit, a directory that does not exist, ...).
        #[source]
        source: notify::Error,
    },
}
