//! [`Heartbeats`]: a round's heartbeats in the background, and how they learn it ended.

use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::quick_answers::QuickAnswers;
use super::{Node, RendezvousClient};
use crate::outcome::RoundStatus;
use crate::{Error, HostNotice};

/// Heartbeats for one round, sent by a tokio task until the round ends; from
/// [`RendezvousClient::heartbeats`]. Dropping it stops them.
#[derive(Debug)]
pub struct Heartbeats {
    ended: Option<oneshot::Receiver<Result<RoundStatus, Error>>>,
    /// The round's asks to restart the chief so far (the count of the latest).
    chief_restarts: watch::Receiver<u32>,
    /// For the chief's node of a ParameterServerStrategy round: the most urgent departure
    /// notice of another member's parameter server, as last heard, with the job's count of
    /// notice changes then.
    server_notice: watch::Receiver<(u32, Option<HostNotice>)>,
    task: JoinHandle<()>,
}

impl Heartbeats {
    pub(super) fn start(
        client: RendezvousClient,
        node: Node,
        round: u64,
        metrics: crate::AgentMetrics,
    ) -> Self {
        let (tx, rx) = oneshot::channel();
        let (asks_tx, asks_rx) = watch::channel(0);
        let (notice_tx, notice_rx) = watch::channel((0, None));
        let timeout = node.heartbeat_timeout().max(Duration::from_millis(30));
        // Three beats per timeout: one lost or slow beat does not make the node look gone.
        let interval = timeout / 3;
        let attempt = interval + client.options.rpc_timeout.min(interval);
        let task = tokio::spawn(async move {
            let mut last_heard = Instant::now();
            let mut quick = QuickAnswers::default();
            // The highest ask to restart the chief passed on: the next beat says so, and
            // the rendezvous holds it again.
            let mut seen = 0;
            // The job's notice changes heard of.
            let mut notices = 0;
            loop {
                let sent = Instant::now();
                // A beat may be retried until the node would be declared gone; past that,
                // the rendezvous is unreachable for this node's purposes.
                let give_up = last_heard + timeout;
                let beat = client.heartbeat_until(
                    &node,
                    round,
                    interval,
                    (seen, notices),
                    give_up,
                    attempt,
                );
                let (answer, failed) = beat.await;
                metrics.heartbeat(sent.elapsed(), failed);
                match answer {
                    Ok(RoundStatus::Running) => last_heard = Instant::now(),
                    Ok(RoundStatus::RestartChief(asks)) => {
                        last_heard = Instant::now();
                        seen = seen.max(asks);
                        asks_tx.send_replace(seen);
                    }
                    Ok(RoundStatus::ServerNotice { notices: n, notice }) => {
                        last_heard = Instant::now();
                        notices = notices.max(n);
                        // Passed on when the notice differs, not for each change elsewhere.
                        notice_tx.send_if_modified(|(count, old)| {
                            let changed = *old != notice;
                            *count = notices;
                            *old = notice;
                            changed
                        });
                    }
                    Ok(end) => {
                        let _ = tx.send(Ok(end));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
                // The server held the beat while the round ran; one answered sooner (the
                // server caps polls lower) is not repeated faster than the interval, and one
                // answered at once waits longer each time.
                let pause = quick.pause(interval, sent.elapsed(), false, Duration::MAX);
                tokio::time::sleep_until(sent + interval + pause).await;
            }
        });
        Self {
            ended: Some(rx),
            chief_restarts: asks_rx,
            server_notice: notice_rx,
            task,
        }
    }

    /// Waits until the round ends: [`RoundStatus::Ended`] or [`RoundStatus::JobDone`], or an
    /// error when the rendezvous was unreachable for the heartbeat timeout or no longer
    /// knows this node. Cancel safe (use it in `tokio::select!` beside the tasks); after it
    /// has returned, it returns [`Error::HeartbeatsFinished`]. Asks to restart the chief
    /// are passed over: [`next`](Self::next) returns them.
    ///
    /// # Errors
    ///
    /// [`Error::Unreachable`] (or another call error) when the heartbeats failed, as said;
    /// [`Error::HeartbeatsFinished`] once it has returned.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the heartbeats run in their own task, and the answer waits for the next call.
    pub async fn ended(&mut self) -> Result<RoundStatus, Error> {
        loop {
            match self.next().await {
                Ok(RoundStatus::RestartChief(_) | RoundStatus::ServerNotice { .. }) => {}
                end => return end,
            }
        }
    }

    /// Waits for what the heartbeats learn next: the round's end, as
    /// [`ended`](Self::ended) returns it, or, for the node that runs the chief, an ask to
    /// restart it ([`RoundStatus::RestartChief`], with the chief's restart number the
    /// latest ask made; it may come more than once), or, in a ParameterServerStrategy round,
    /// a change of the most urgent departure notice of another member's parameter server
    /// ([`RoundStatus::ServerNotice`]; `None` once none stands).
    ///
    /// # Errors
    ///
    /// As [`ended`](Self::ended)'s.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an answer not yet returned waits for the next call.
    pub async fn next(&mut self) -> Result<RoundStatus, Error> {
        let Some(rx) = self.ended.as_mut() else {
            return Err(Error::HeartbeatsFinished);
        };
        let asks = &mut self.chief_restarts;
        let server_notice = &mut self.server_notice;
        let ended = tokio::select! {
            biased;
            ended = rx => ended,
            Ok(()) = asks.changed() => {
                return Ok(RoundStatus::RestartChief(*asks.borrow_and_update()));
            }
            Ok(()) = server_notice.changed() => {
                let (notices, notice) = server_notice.borrow_and_update().clone();
                return Ok(RoundStatus::ServerNotice { notices, notice });
            }
        };
        self.ended = None;
        ended.unwrap_or(Err(Error::HeartbeatsFinished))
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        self.task.abort();
    }
}
