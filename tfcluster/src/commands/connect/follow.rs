//! `tfcluster connect --follow`: the connect report, then one line per change of the cluster
//! (tasks added, removed, replaced; the new device count) until SIGINT or SIGTERM, which close
//! every remote context.

use anyhow::anyhow;
use cluster_resolver::watch::ClusterStream;
use remote_connect::{ClusterChange, ConnectOptions, Context, FollowEvent, FollowOptions, TaskId};
use tokio::sync::broadcast::error::RecvError;

use crate::failure::Failure;
use crate::output::emit;
use crate::report::{self, Format};
use crate::stop_signal::{Stop, stopped};

pub(crate) async fn run(
    changes: ClusterStream,
    options: ConnectOptions,
    format: Format,
) -> Result<(), Failure> {
    // Caught from here: a Ctrl-C during the first connect closes what it made too.
    let mut stop = Stop::install();
    let ctx = Context::new();
    let follow = ctx.follow(changes, FollowOptions::new(options));
    let mut events = follow.subscribe();
    let mut connected = false;
    let signal = loop {
        let event = tokio::select! {
            signal = stop.next() => break signal,
            event = events.recv() => event,
        };
        match event {
            Ok(FollowEvent::Changed(change)) if connected => emit(&line(&change, format))?,
            Ok(FollowEvent::Changed(_)) => {
                connected = true;
                emit(&report::render(&ctx, format))?;
            }
            // Before the first connect, as `connect` without --follow: the cluster cannot be
            // read or reached. Later failures are logged (warn) by the follower and retried.
            Ok(FollowEvent::Failed { error, .. }) if !connected => {
                return Err(anyhow::Error::new(error).into());
            }
            Ok(FollowEvent::Source(error)) if !connected => {
                return Err(anyhow!(error).context("cannot read the cluster").into());
            }
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "changes came faster than they were printed")
            }
            Err(RecvError::Closed) => unreachable!("`follow` holds the events' sender"),
        }
    };
    follow.stop().await;
    if let Err(error) = ctx.close().await {
        tracing::warn!(
            error = %cluster_spec::__private::error_chain::Chain(&error),
            "some remote contexts could not be closed (they expire after keep_alive_secs)"
        );
    }
    Err(stopped(signal, "following the cluster"))
}

/// One change: `update: added /job:worker/replica:0/task:2; 4 devices`, or a JSON object
/// with keys `added`, `removed`, `replaced` (task names), `reset` and `devices`.
fn line(change: &ClusterChange, format: Format) -> String {
    let lists = [
        ("added", &change.added),
        ("removed", &change.removed),
        ("replaced", &change.replaced),
    ];
    match format {
        Format::Json => {
            let mut object = serde_json::json!({
                "reset": change.reset,
                "devices": change.devices,
            });
            for (key, tasks) in lists {
                object[key] = tasks.iter().map(TaskId::to_string).collect();
            }
            format!("{object}\n")
        }
        Format::Table => {
            let mut parts: Vec<String> = lists
                .iter()
                .filter(|(_, tasks)| !tasks.is_empty())
                .map(|(what, tasks)| {
                    let names: Vec<String> = tasks.iter().map(TaskId::to_string).collect();
                    format!("{what} {}", names.join(", "))
                })
                .collect();
            if parts.is_empty() {
                parts.push("no task changed".into());
            }
            let kind = if change.reset { "reset" } else { "update" };
            format!("{kind}: {}; {} devices\n", parts.join("; "), change.devices)
        }
    }
}
