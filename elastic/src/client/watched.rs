//! [`Watched`]: what an observer's long poll
//! ([`watch_round`](super::RendezvousClient::watch_round)) found.

use crate::outcome::JobDone;
use crate::watched_round::WatchedRound;

/// What [`watch_round`](super::RendezvousClient::watch_round) found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Watched {
    /// The job's running round, later than the one asked after.
    Round(WatchedRound),
    /// No such round within the poll: what the next round waits for.
    Pending {
        /// The round the job waits for.
        round: u64,
        /// How many nodes wait for it.
        waiting: u32,
        /// What it waits for, e.g. `round 2 waits for nodes: 1 of min 2 (max 4) have joined`.
        detail: String,
    },
    /// The job is done; no round will come.
    JobDone(JobDone),
}
