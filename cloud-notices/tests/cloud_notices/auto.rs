//! `auto`: the cloud from the firmware alone; nothing sent on a host that is no cloud VM;
//! an endpoint variable that does not parse, named.

use std::time::Duration;

use cloud_notices::{Cloud, NoticeSource, NoticeWatcher, WatchOptions};
use http_standin::GceMetadata;

fn dmi(product_name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a scratch directory");
    std::fs::write(dir.path().join("product_name"), format!("{product_name}\n")).unwrap();
    dir
}

#[tokio::test]
async fn auto_on_a_host_that_is_no_cloud_vm_sends_nothing() {
    let metadata = GceMetadata::start().await;
    let dir = dmi("Standard PC (Q35 + ICH9, 2009)");
    let options = WatchOptions::default()
        .with_dmi_dir(dir.path())
        .with_var("GCE_METADATA_HOST", metadata.host())
        .with_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata.url())
        .with_var("TFCLUSTER_AZURE_METADATA_ENDPOINT", metadata.url())
        .with_poll(Duration::from_millis(20));
    let watcher = NoticeWatcher::start(NoticeSource::Auto, &options).unwrap();
    assert!(watcher.is_none());
    // What a watcher would have sent by now, had one started, many times over.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(metadata.requests().is_empty(), "{:?}", metadata.requests());
    metadata.stop().await;
}

#[tokio::test]
async fn auto_on_a_gce_vm_watches_gce() {
    let metadata = GceMetadata::start().await;
    let dir = dmi("Google Compute Engine");
    let options = WatchOptions::default()
        .with_dmi_dir(dir.path())
        .with_var("GCE_METADATA_HOST", metadata.host());
    let watcher = NoticeWatcher::start(NoticeSource::Auto, &options)
        .unwrap()
        .expect("a GCE VM is watched");
    assert_eq!(watcher.cloud(), Cloud::Gce);
    metadata.wait_for_requests(2).await;
    drop(watcher);
    metadata.stop().await;
}

#[test]
fn off_watches_nothing_and_a_bad_variable_is_named() {
    let options = WatchOptions::default().with_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", "ec2:80");
    assert!(
        NoticeWatcher::start(NoticeSource::Off, &options)
            .unwrap()
            .is_none()
    );
    let err = NoticeWatcher::start(NoticeSource::Cloud(Cloud::Aws), &options)
        .err()
        .expect("refused");
    assert_eq!(err.variable, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
    assert!(
        err.to_string()
            .starts_with("AWS_EC2_METADATA_SERVICE_ENDPOINT=\"ec2:80\": ")
    );
}
