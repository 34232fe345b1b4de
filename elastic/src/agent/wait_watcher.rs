//! [`WaitWatcher`]: who the agent tells how its wait for a round goes, so that a host
//! waiting for the others says what it waits for (`tfcluster run` prints it).

use std::fmt;
use std::sync::Arc;

use crate::WaitProgress;

/// Told of each of the agent's waits for a round: what the rendezvous says of the round as
/// it forms ([`WaitProgress`]: the first at once, then as hosts join or each long poll), and
/// when the wait ended (a round came, the job ended, or the wait failed).
pub trait WaitWatcher: Send + Sync {
    /// The round the agent waits for, as the rendezvous last said.
    fn pending(&self, progress: &WaitProgress);

    /// The wait is over.
    fn ended(&self) {}
}

/// An [`AgentOptions`](super::AgentOptions)'s watcher, shared by its clones.
#[derive(Clone)]
pub(crate) struct Watcher(pub(crate) Arc<dyn WaitWatcher>);

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WaitWatcher")
    }
}

/// Tells its watcher the wait ended when dropped.
pub(crate) struct EndOfWait<'a>(pub(crate) &'a dyn WaitWatcher);

impl Drop for EndOfWait<'_> {
    fn drop(&mut self) {
        self.0.ended();
    }
}
