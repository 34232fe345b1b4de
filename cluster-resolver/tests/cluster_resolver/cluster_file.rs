//! `cluster_file::parse`: both shapes of a cluster file read back to the spec they were
//! written from, and no text makes it panic.

use cluster_resolver::{cluster_file, tf_config_for};
use proptest::prelude::*;

use crate::cluster_resolver::strategies::cluster;

proptest! {
    /// A bare spec and a TF_CONFIG document of any cluster read back to that cluster (the
    /// document with its task too).
    #[test]
    fn both_shapes_read_back(cluster in cluster(), pick in any::<prop::sample::Index>()) {
        let spec = cluster.to_spec();
        prop_assert_eq!(&cluster_file::parse(&cluster.to_json()).unwrap().cluster, &spec);

        let jobs = spec.jobs();
        prop_assume!(!jobs.is_empty());
        let job = jobs[pick.index(jobs.len())];
        let Some(&task) = spec.task_indices(job).unwrap().first() else {
            return Ok(());
        };
        let document = tf_config_for(&spec, job, task, Some("grpc")).unwrap();
        let read = cluster_file::parse(&document).unwrap();
        prop_assert_eq!(&read.cluster, &spec);
        prop_assert_eq!(read.task_type.as_deref(), Some(job));
        prop_assert_eq!(read.task_id, Some(task));
    }

    /// Any text is a cluster or an error, never a panic.
    #[test]
    fn any_text_is_read_or_refused(text in ".{0,200}") {
        let _ = cluster_file::parse(&text);
    }

    /// Any TF_CONFIG-shaped text too.
    #[test]
    fn any_document_is_read_or_refused(body in ".{0,120}") {
        let _ = cluster_file::parse(&format!(r#"{{"cluster": {body}}}"#));
    }
}

#[test]
fn an_invalid_document_names_the_line_column_and_value() {
    let err =
        cluster_file::parse("{\"cluster\": {\"w\": [\"a:1\"]},\n \"task\": {\"index\": \"x\"}}")
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid TF_CONFIG document at line 2, column 22: \
         invalid value: string \"x\", expected `task.index` to be a task index from 0 to \
         2147483647, as a number or a string of decimal digits: \
         \"{\\\"cluster\\\": {\\\"w\\\": [\\\"a:1\\\"]},\\n \\\"task\\\": {\\\"index\\\": \\\"x\\\"}}\""
    );
}

#[test]
fn messages_stay_short_for_a_big_file() {
    let big = "x".repeat(1 << 20);
    let document =
        format!(r#"{{"cluster": {{"w": ["a:1"]}}, "pad": "{big}", "task": {{"index": "y"}}}}"#);
    let err = cluster_file::parse(&document).unwrap_err();
    tf_oracle::assert_bounded(err, &["invalid TF_CONFIG document at line 1", "\"y\""]);
    let bare = format!(r#"{{"w": ["a:1", "{big}"]}}"#);
    tf_oracle::assert_bounded(cluster_file::parse(&bare).unwrap_err(), &["xxx"]);
}
