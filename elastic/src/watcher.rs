//! [`RendezvousWatcher`]: a job's rounds followed from outside the job, as a
//! `ClusterResolver` (the running round's cluster) and a `WatchClusterResolver` (one spec per
//! new round, by long poll).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cluster_resolver::watch::{ClusterStream, WatchOptions};
use cluster_resolver::{Backoff, ClusterResolver, WatchClusterResolver, format_master_url};
use cluster_spec::__private::quote::quote;
use cluster_spec::ClusterSpec;
use futures_util::stream;
use tokio::time::Instant;

use crate::Error;
use crate::client::quick_answers::QuickAnswers;
use crate::client::{RendezvousClient, Watched};
use crate::watched_round::WatchedRound;

/// How long [`RendezvousWatcher::round`] waits for a running round by default.
const ROUND_TIMEOUT: Duration = Duration::from_secs(10);

/// The rounds of job `rdzv_id`, watched by an observer that is no node of the job: it joins
/// nothing, heartbeats nothing and changes nothing (the rendezvous's `WatchRounds` call), so
/// any number of watchers may follow a job.
///
/// As a [`ClusterResolver`] it answers with the job's running round: its cluster
/// ([`cluster_spec`](ClusterResolver::cluster_spec), waiting up to
/// [`round_timeout`](Self::with_round_timeout) while the job is between rounds); as master, with no
/// task asked for, the job's coordinator (`chief` 0, else `worker` 0, else the round's first
/// task), RPC layer `grpc`; no task type or id of its own (the watcher is no task); environment
/// `""`.
///
/// As a [`WatchClusterResolver`] its [`watch`](WatchClusterResolver::watch) stream yields the
/// running round's cluster first, then the cluster of each later round whose cluster differs
/// (a round that restarts the same tasks at the same addresses is no change of the cluster).
/// Each item comes from a long poll that the rendezvous answers as the round forms, not from
/// polling at an interval. A rendezvous that cannot be reached (after the client's
/// [`retry_for`](crate::ClientOptions::with_retry_for)) or does not know the job is an `Err` item,
/// and the watch goes on after a back-off pause ([`WatchOptions::backoff_first`] doubling up
/// to [`WatchOptions::backoff_max`]); a restarted rendezvous, whose job begins again at round
/// 1, is followed from its new rounds (each round names its job's incarnation, so even a
/// restart the client's retries hid is seen). When the job is over, the stream yields one
/// `Err` item saying how it ended ([`Error::JobEnded`] as its source), then nothing more: it
/// stays open, as every [`ClusterStream`] does, until it is dropped.
#[derive(Debug, Clone)]
pub struct RendezvousWatcher {
    client: RendezvousClient,
    rdzv_id: String,
    round_timeout: Duration,
}

impl RendezvousWatcher {
    /// A watcher of job `rdzv_id` through `client`. Every call has the client's deadlines;
    /// give it a short [`retry_for`](crate::ClientOptions::with_retry_for) for a watch to report
    /// an unreachable rendezvous promptly (it retries by itself, with back-off).
    pub fn new(client: RendezvousClient, rdzv_id: impl Into<String>) -> Self {
        Self {
            client,
            rdzv_id: rdzv_id.into(),
            round_timeout: ROUND_TIMEOUT,
        }
    }

    /// How long [`round`](Self::round) (and so `cluster_spec`) waits for a round while the
    /// job is between rounds: 10 s by default.
    pub fn with_round_timeout(mut self, timeout: Duration) -> Self {
        self.round_timeout = timeout;
        self
    }

    /// The job's running round, waiting up to [`round_timeout`](Self::with_round_timeout) for
    /// one ([`Error::WaitTimeout`], saying what the round waits for, when none forms);
    /// [`Error::JobEnded`] when the job is over.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] and [`Error::JobEnded`] as said, and those of
    /// [`RendezvousClient::watch_round`] (an unknown job, an unreachable rendezvous).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an observer changes nothing.
    pub async fn round(&self) -> Result<WatchedRound, Error> {
        let start = Instant::now();
        let deadline = start + self.round_timeout;
        let mut quick = QuickAnswers::default();
        let mut last_pending = None;
        loop {
            let poll = deadline.saturating_duration_since(Instant::now());
            let asked = Instant::now();
            match self.client.watch_round(&self.rdzv_id, None, poll).await? {
                Watched::Round(round) => return Ok(round),
                Watched::JobDone(done) => return Err(self.ended(done)),
                Watched::Pending { detail, .. } if Instant::now() >= deadline => {
                    return Err(Error::WaitTimeout {
                        rdzv_id: self.rdzv_id.clone(),
                        waited: start.elapsed(),
                        pending: detail,
                    });
                }
                Watched::Pending { round, waiting, .. } => {
                    let changed = last_pending != Some((round, waiting));
                    last_pending = Some((round, waiting));
                    let left = deadline.saturating_duration_since(Instant::now());
                    // The poll asked, as the client caps it.
                    let asked_for = poll.min(crate::client::MAX_POLL);
                    let pause = quick.pause(asked_for, asked.elapsed(), changed, left);
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }

    fn ended(&self, done: crate::JobDone) -> Error {
        Error::JobEnded {
            rdzv_id: self.rdzv_id.clone(),
            done: Box::new(done),
        }
    }

    /// `error` as the resolver's, saying what was asked of which rendezvous.
    fn resolver_error(&self, error: Error) -> cluster_resolver::Error {
        cluster_resolver::Error::Request {
            operation: format!(
                "watching the rounds of job {} at rendezvous {}",
                quote(&self.rdzv_id, 0),
                self.client.addr()
            ),
            source: Box::new(error),
        }
    }
}

/// The task a master with no task asked for is: `chief` 0, else `worker` 0, else the first
/// task of the first job (a layout of only other jobs).
fn coordinator(spec: &ClusterSpec) -> Option<(&str, u32)> {
    let first = |job: &str| Some(*spec.task_indices(job).ok()?.first()?);
    ["chief", "worker"]
        .into_iter()
        .chain(spec.jobs())
        .find_map(|job| Some((job, first(job)?)))
}

#[async_trait]
impl ClusterResolver for RendezvousWatcher {
    async fn cluster_spec(&self) -> Result<ClusterSpec, cluster_resolver::Error> {
        let round = self.round().await.map_err(|e| self.resolver_error(e))?;
        Ok(round.cluster_spec().clone())
    }

    async fn master(
        &self,
        task_type: Option<&str>,
        task_id: Option<u32>,
        rpc_layer: Option<&str>,
    ) -> Result<String, cluster_resolver::Error> {
        let spec = self.cluster_spec().await?;
        let (job, index) = match task_type {
            Some(job) => (job, task_id.unwrap_or(0)),
            None => {
                let (job, index) = coordinator(&spec).unwrap_or(("worker", 0));
                (job, task_id.unwrap_or(index))
            }
        };
        let address = spec.task_address(job, index)?;
        Ok(format_master_url(address, rpc_layer.or(Some("grpc"))))
    }

    /// None: the watcher is no task of the job.
    fn task_type(&self) -> Option<String> {
        None
    }

    /// None: the watcher is no task of the job.
    fn task_id(&self) -> Option<u32> {
        None
    }

    fn rpc_layer(&self) -> Option<String> {
        Some("grpc".to_owned())
    }
}

impl WatchClusterResolver for RendezvousWatcher {
    /// The running round's cluster, then each later round's that differs; see
    /// [`RendezvousWatcher`]. Long polls of up to [`call_timeout`](WatchOptions::call_timeout)
    /// (at most 10 s); [`interval`](WatchOptions::interval) and
    /// [`coalesce`](WatchOptions::coalesce) are unused, as rounds are pushed whole.
    fn watch(self: Arc<Self>, options: WatchOptions) -> ClusterStream {
        let follower = Follower {
            backoff: Backoff::new(options.backoff_first(), options.backoff_max()),
            quick: QuickAnswers::default(),
            poll: options.call_timeout(),
            watcher: self,
            after: None,
            last: None,
            pause: None,
            over: false,
        };
        Box::pin(stream::unfold(follower, |mut follower| async move {
            let item = follower.next().await;
            Some((item, follower))
        }))
    }
}

/// The state of one [`RendezvousWatcher::watch`] stream.
struct Follower {
    watcher: Arc<RendezvousWatcher>,
    backoff: Backoff,
    /// The pause after an answer that came back at once, unchanged.
    quick: QuickAnswers,
    poll: Duration,
    /// The last round seen.
    after: Option<WatchedRound>,
    /// The last spec emitted.
    last: Option<ClusterSpec>,
    /// The wait before the next call, after a failure.
    pause: Option<Duration>,
    /// The job is over and was reported so: nothing more comes.
    over: bool,
}

impl Follower {
    /// Waits before the next call when the one `asked` at came back far sooner than its poll.
    async fn pace(&mut self, asked: Instant) {
        let poll = self.poll.min(crate::client::MAX_POLL);
        let pause = self
            .quick
            .pause(poll, asked.elapsed(), false, Duration::MAX);
        tokio::time::sleep(pause).await;
    }

    /// Long polls until a round with another cluster forms, a call fails, or the job ends.
    async fn next(&mut self) -> Result<ClusterSpec, cluster_resolver::Error> {
        if self.over {
            std::future::pending::<()>().await;
        }
        let watcher = Arc::clone(&self.watcher);
        loop {
            if let Some(pause) = self.pause.take() {
                tokio::time::sleep(pause).await;
            }
            let asked = Instant::now();
            let watched = watcher
                .client
                .watch_round(&watcher.rdzv_id, self.after.as_ref(), self.poll)
                .await;
            match watched {
                Ok(Watched::Round(round)) => {
                    self.backoff.reset();
                    let spec = round.cluster_spec().clone();
                    self.after = Some(round);
                    if self.last.as_ref() != Some(&spec) {
                        self.last = Some(spec.clone());
                        self.quick = QuickAnswers::default();
                        return Ok(spec);
                    }
                    self.pace(asked).await;
                }
                Ok(Watched::Pending { .. }) => {
                    self.backoff.reset();
                    self.pace(asked).await;
                }
                Ok(Watched::JobDone(done)) => {
                    self.over = true;
                    return Err(watcher.resolver_error(watcher.ended(done)));
                }
                Err(e) => {
                    self.pause = Some(self.backoff.pause(Duration::MAX));
                    return Err(watcher.resolver_error(e));
                }
            }
        }
    }
}
