//! `watch::file`: a cluster file replaced by a rename or rewritten in place is followed, a
//! malformed version is reported and skipped, and a burst of rewrites ends on the last.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cluster_resolver::Error;
use cluster_resolver::watch::{self, ClusterStream, WatchOptions};
use cluster_spec::__private::error_chain::Chain;
use futures_util::StreamExt;

use super::{PROMPT, next, stays_quiet, workers};

/// A directory of its own for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("tfcluster-watch-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Self(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("cluster.json")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bare cluster-spec JSON of [`workers`]`(n)`.
fn json(n: usize) -> String {
    workers(n).to_json()
}

/// Writes `text` beside `path` and renames it over `path`, as atomic writers do.
fn replace(path: &Path, text: &str) {
    let staged = path.with_extension("tmp");
    std::fs::write(&staged, text).expect("write staged file");
    std::fs::rename(&staged, path).expect("rename over the file");
}

/// Options that rely on file events: the safety re-read is far off.
fn evented() -> WatchOptions {
    WatchOptions::default().with_interval(Duration::from_secs(60))
}

/// The next `Ok` spec, skipping reported errors.
async fn next_spec(changes: &mut ClusterStream) -> cluster_spec::ClusterSpec {
    loop {
        if let Ok(spec) = next(changes).await {
            return spec;
        }
    }
}

#[tokio::test]
async fn a_rename_replace_is_seen() {
    let scratch = Scratch::new("rename");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
    replace(&path, &json(2));
    assert_eq!(next(&mut changes).await.unwrap(), workers(2));
    // Rewriting the same cluster is no change.
    replace(&path, &json(2));
    assert!(stays_quiet(&mut changes, Duration::from_millis(300)).await);
}

#[tokio::test]
async fn an_in_place_rewrite_is_seen_tf_config_documents_too() {
    let scratch = Scratch::new("in-place");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
    let document = format!(
        r#"{{"cluster": {}, "task": {{"type": "worker", "index": 0}}}}"#,
        json(3)
    );
    std::fs::write(&path, document).unwrap();
    // A truncate-then-write may be seen half written first (reported, skipped).
    assert_eq!(next_spec(&mut changes).await, workers(3));
}

#[tokio::test]
async fn a_malformed_version_is_reported_then_the_next_good_one_emitted() {
    let scratch = Scratch::new("malformed");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));

    replace(&path, r#"{"worker": ["w0:1", "w1"]}"#);
    let err = next(&mut changes).await.unwrap_err();
    assert!(matches!(err, Error::Watch(_)), "{err:?}");
    let message = Chain(&err).to_string();
    assert!(
        message.starts_with(&format!(
            "cluster file {} holds no valid cluster: ",
            path.display()
        )),
        "{message}"
    );
    assert!(message.contains("\"w1\""), "names the bad value: {message}");

    replace(&path, &json(2));
    assert_eq!(next(&mut changes).await.unwrap(), workers(2));
}

#[cfg(unix)]
#[tokio::test]
async fn a_configmap_volume_update_is_seen() {
    // Kubernetes' atomic writer: `cluster.json -> ..data/cluster.json`, `..data -> ..<version>`;
    // an update writes a new version directory and renames a new `..data` over the old one.
    let scratch = Scratch::new("configmap");
    let version = |name: &str, n: usize| {
        let dir = scratch.0.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cluster.json"), json(n)).unwrap();
    };
    version("..v1", 1);
    std::os::unix::fs::symlink("..v1", scratch.0.join("..data")).unwrap();
    let path = scratch.file();
    std::os::unix::fs::symlink("..data/cluster.json", &path).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));

    version("..v2", 2);
    std::os::unix::fs::symlink("..v2", scratch.0.join("..data_tmp")).unwrap();
    std::fs::rename(scratch.0.join("..data_tmp"), scratch.0.join("..data")).unwrap();
    assert_eq!(next(&mut changes).await.unwrap(), workers(2));
}

#[tokio::test]
async fn an_invalid_tf_config_document_is_named_as_one() {
    let scratch = Scratch::new("tf-config");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
    replace(
        &path,
        r#"{"cluster": {"worker": ["w0:1"]}, "task": {"index": 1.5}}"#,
    );
    let err = next(&mut changes).await.unwrap_err();
    let message = Chain(&err).to_string();
    assert!(
        message.starts_with(&format!(
            "cluster file {} holds no valid cluster: invalid TF_CONFIG document at line 1, column ",
            path.display()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_file_is_reported_and_followed_once_it_appears() {
    let scratch = Scratch::new("missing");
    let path = scratch.file();
    let mut changes = watch::file(&path, evented());
    let err = next(&mut changes).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot read cluster file {}", path.display())
    );
    replace(&path, &json(1));
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
}

#[tokio::test]
async fn the_interval_re_read_catches_what_events_miss() {
    let scratch = Scratch::new("re-read");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    // A directory that does not exist cannot be watched: the error is reported after the
    // first item, and the re-read alone follows the file.
    let elsewhere = scratch.0.join("absent").join("cluster.json");
    let options = WatchOptions::default().with_interval(Duration::from_millis(20));
    let mut changes = watch::file(&elsewhere, options);
    let first = next(&mut changes).await.unwrap_err();
    assert!(
        first.to_string().starts_with("cannot read cluster file"),
        "{first}"
    );
    let notify = next(&mut changes).await.unwrap_err();
    assert!(
        notify.to_string().starts_with("cannot watch directory"),
        "{notify}"
    );
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::write(&elsewhere, json(2)).unwrap();
    assert_eq!(next_spec(&mut changes).await, workers(2));
}

#[tokio::test]
async fn a_hundred_rewrites_in_a_second_end_on_the_last_with_few_items() {
    let scratch = Scratch::new("burst");
    let path = scratch.file();
    std::fs::write(&path, json(1)).unwrap();
    let mut changes = watch::file(&path, evented());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));

    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            for n in 2..=101 {
                std::fs::write(&path, json(n)).unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
            started.elapsed()
        })
    };
    let mut items = 0;
    let deadline = Instant::now() + PROMPT;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let item = tokio::time::timeout(remaining, changes.next())
            .await
            .expect("the last version within the deadline")
            .expect("watch streams never end");
        items += 1;
        if item.is_ok_and(|spec| spec == workers(101)) {
            break;
        }
    }
    let took = writer.join().unwrap();
    assert!(
        items <= 50,
        "{items} items for 100 writes in {took:?}: bursts are coalesced"
    );
    // Nothing after the last version.
    assert!(stays_quiet(&mut changes, Duration::from_millis(300)).await);
}
