//! The watchers against stand-ins of each cloud's metadata service, written from the clouds'
//! documentation (`http-standin`): each notice seen when the cloud sets it and withdrawn
//! when it clears, the clouds' rules followed (GCE's header and long polls with ETags,
//! IMDSv2's tokens, expiry and 401s, Azure's events for this VM and their approval), garbage
//! and unreachable services survived, and `auto` silent on a host that is no cloud VM.

mod cloud_notices {
    mod auto;
    mod aws;
    mod azure;
    mod gce;
}

use std::time::Duration;

use ::cloud_notices::Notice;
use tokio::sync::watch;

/// How long a test waits for what it expects: generous, as the machine may be busy; the
/// verdict is what arrives, not how fast.
const WAIT: Duration = Duration::from_secs(30);

/// Waits until the published notice satisfies `wanted`, and returns it.
async fn until(
    notices: &mut watch::Receiver<Option<Notice>>,
    what: &str,
    wanted: impl Fn(&Option<Notice>) -> bool,
) -> Option<Notice> {
    let seen = tokio::time::timeout(WAIT, async {
        notices.wait_for(|n| wanted(n)).await.map(|n| n.clone())
    })
    .await;
    match seen {
        Ok(seen) => seen.expect("the watcher runs"),
        Err(_) => panic!("no {what} within {WAIT:?}: {:?}", *notices.borrow()),
    }
}
