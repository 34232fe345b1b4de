//! `watch::poll`: a resolver polled at an interval emits only changes, reports failures and
//! goes on, and stops when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cluster_resolver::watch::{self, WatchOptions};
use cluster_resolver::{ClusterResolver, Error};
use cluster_spec::ClusterSpec;

use super::{next, stays_quiet, workers};

/// What the scripted resolver answers next.
enum Answer {
    Spec(ClusterSpec),
    Fail,
    Hang,
}

/// A resolver answering what the test sets, counting its calls.
struct Scripted {
    answer: Mutex<Answer>,
    calls: AtomicUsize,
}

impl Scripted {
    fn new(spec: ClusterSpec) -> Arc<Self> {
        Arc::new(Self {
            answer: Mutex::new(Answer::Spec(spec)),
            calls: AtomicUsize::new(0),
        })
    }

    fn set(&self, answer: Answer) {
        *self.answer.lock().expect("answer") = answer;
    }
}

#[async_trait]
impl ClusterResolver for Scripted {
    async fn cluster_spec(&self) -> Result<ClusterSpec, Error> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = match &*self.answer.lock().expect("answer") {
            Answer::Spec(spec) => Some(Ok(spec.clone())),
            Answer::Fail => Some(Err(Error::MissingVariable {
                name: "SCRIPTED".to_owned(),
            })),
            Answer::Hang => None,
        };
        match answer {
            Some(answer) => answer,
            None => std::future::pending().await,
        }
    }

    async fn master(
        &self,
        _: Option<&str>,
        _: Option<u32>,
        _: Option<&str>,
    ) -> Result<String, Error> {
        Ok(String::new())
    }

    fn task_type(&self) -> Option<String> {
        None
    }

    fn task_id(&self) -> Option<u32> {
        None
    }

    fn rpc_layer(&self) -> Option<String> {
        None
    }
}

fn fast() -> WatchOptions {
    WatchOptions::default()
        .with_interval(Duration::from_millis(10))
        .with_backoff(Duration::from_millis(10), Duration::from_millis(40))
}

#[tokio::test]
async fn emits_the_current_spec_then_only_changes() {
    let resolver = Scripted::new(workers(1));
    let mut changes = watch::poll(Arc::clone(&resolver), fast());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
    // Many polls of the same spec, no item.
    assert!(stays_quiet(&mut changes, Duration::from_millis(200)).await);
    assert!(resolver.calls.load(Ordering::SeqCst) > 3);

    resolver.set(Answer::Spec(workers(2)));
    assert_eq!(next(&mut changes).await.unwrap(), workers(2));
    // The same jobs written the other way (sparse, as TF_CONFIG allows) are no change.
    let sparse = ClusterSpec::from_json(r#"{"worker": {"1": "w1:1", "0": "w0:1"}}"#).unwrap();
    resolver.set(Answer::Spec(sparse));
    assert!(stays_quiet(&mut changes, Duration::from_millis(100)).await);
}

#[tokio::test]
async fn a_failed_poll_is_reported_and_polling_goes_on() {
    let resolver = Scripted::new(workers(1));
    let mut changes = watch::poll(Arc::clone(&resolver), fast());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));

    resolver.set(Answer::Fail);
    let err = next(&mut changes).await.unwrap_err();
    assert_eq!(err.to_string(), "environment variable SCRIPTED is not set");

    resolver.set(Answer::Spec(workers(3)));
    // Failures until the answer changes back are reported too; then the new spec.
    let recovered = loop {
        if let Ok(spec) = next(&mut changes).await {
            break spec;
        }
    };
    assert_eq!(recovered, workers(3));
}

#[tokio::test]
async fn a_hung_poll_times_out_and_is_reported() {
    let resolver = Scripted::new(workers(1));
    resolver.set(Answer::Hang);
    let options = fast().with_call_timeout(Duration::from_millis(50));
    let mut changes = watch::poll(Arc::clone(&resolver), options);
    let err = next(&mut changes).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "polling the resolver (cluster_spec()) timed out after 50ms"
    );
    resolver.set(Answer::Spec(workers(1)));
    let recovered = loop {
        if let Ok(spec) = next(&mut changes).await {
            break spec;
        }
    };
    assert_eq!(recovered, workers(1));
}

#[tokio::test]
async fn dropping_the_stream_stops_polling() {
    let resolver = Scripted::new(workers(1));
    let mut changes = watch::poll(Arc::clone(&resolver), fast());
    assert_eq!(next(&mut changes).await.unwrap(), workers(1));
    drop(changes);
    let calls = resolver.calls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(resolver.calls.load(Ordering::SeqCst), calls);
    // Nothing else holds the resolver: no task was left running with it.
    assert_eq!(Arc::strong_count(&resolver), 1);
}
