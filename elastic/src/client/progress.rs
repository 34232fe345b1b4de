//! [`WaitProgress`]: how far a node's wait for its next round got, as the rendezvous said it,
//! for a caller that tells its user (`tfcluster run` prints it while a host waits).

use std::time::Duration;

/// Where a node's wait for its next round stands: what the rendezvous last said of the round
/// (the first answer of a wait comes at once; later ones when the round's waiting hosts change,
/// or each long poll, up to 10 s), and how long the node has waited of its timeout.
#[derive(Debug, Clone)]
pub struct WaitProgress {
    pub(crate) round: u64,
    pub(crate) waiting: u32,
    pub(crate) detail: String,
    pub(crate) waited: Duration,
    pub(crate) timeout: Duration,
}

impl WaitProgress {
    /// The round the node waits for.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// How many nodes wait for it, this one included.
    pub fn waiting(&self) -> u32 {
        self.waiting
    }

    /// What the rendezvous says the round waits for, e.g. `round 1 waits for nodes: 1 of min
    /// 2 (max 2) have joined`.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// How long this wait has lasted.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// How long the wait may last in all.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}
