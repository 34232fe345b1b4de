//! A cloud's notice turned into the agent's planned departure: while a notice stands, its
//! tasks can read it (`TFCLUSTER_NOTICE_FILE`, which `tfcluster.preemption_deadline()` and
//! `tfcluster.preemption_watcher()` read), and at its deadline less the lead the agent
//! stops as on a SIGTERM: its tasks get SIGTERM (TensorFlow's `PreemptionCheckpointHandler`
//! saves at one step on every worker), it leaves the job, and the next round forms without
//! this host. A notice withdrawn before then (a flapping one) cancels the departure; a
//! rebalance recommendation (no deadline) is shown, never acted on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cloud_notices::Notice;
use futures_util::Stream;
use launcher::supervise::Signal;
use tokio::sync::watch;

use super::metrics::AgentMetrics;

/// The variable naming the file a task reads the standing notice from.
pub const NOTICE_FILE: &str = "TFCLUSTER_NOTICE_FILE";

/// A cloud's notices for this host ([`cloud_notices::NoticeWatcher::notices`]) and how long
/// before a notice's deadline the agent leaves: [`AgentOptions::with_notices`](crate::AgentOptions::with_notices).
#[derive(Debug, Clone)]
pub struct Notices {
    pub(crate) notices: watch::Receiver<Option<Notice>>,
    pub(crate) lead: Duration,
}

impl Notices {
    /// The notices on `notices`, acted on `lead` before each deadline (at once when less
    /// than `lead` is left).
    pub fn new(notices: watch::Receiver<Option<Notice>>, lead: Duration) -> Self {
        Self { notices, lead }
    }
}

/// The file the standing notice is written to, in a directory of the agent's own, removed
/// with it.
#[derive(Debug)]
pub(crate) struct NoticeFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl NoticeFile {
    pub(crate) fn create() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("tfcluster-notice")
            .tempdir()?;
        let path = dir.path().join("notice.json");
        Ok(Self { _dir: dir, path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `notice` (acted on at `act_at`), or removes the file without one; replaced
    /// whole (a rename), so a reader sees the old notice or the new, never half.
    fn show(&self, notice: Option<(&Notice, Option<SystemTime>)>) {
        let written = match notice {
            Some((notice, act_at)) => {
                let seconds =
                    |t: SystemTime| t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs_f64());
                let document = serde_json::json!({
                    "cloud": notice.cloud.as_str(),
                    "kind": notice.kind.as_str(),
                    "deadline": notice.deadline.and_then(seconds),
                    "act_at": act_at.and_then(seconds),
                    "detail": notice.detail,
                });
                let partial = self.path.with_extension("partial");
                std::fs::write(&partial, document.to_string())
                    .and_then(|()| std::fs::rename(&partial, &self.path))
            }
            None => match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        if let Err(e) = written {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot show the notice to the tasks");
        }
    }
}

/// What fired the departure, once it did.
pub(crate) type Fired = Arc<OnceLock<Notice>>;

/// A SIGTERM at the standing departure's act time, then nothing: the agent's stop. Each
/// notice is logged, counted and shown in `file` as it comes and goes.
pub(crate) fn departure(
    notices: Notices,
    file: Option<Arc<NoticeFile>>,
    metrics: AgentMetrics,
    fired: Fired,
) -> impl Stream<Item = Signal> {
    let act = async move {
        let notice = act_time(notices, file.as_deref(), &metrics).await;
        tracing::warn!(%notice, "leaving the job ahead of the cloud's notice: stopping the tasks (SIGTERM: TensorFlow saves at one step) and leaving, so the next round forms without this host");
        let _ = fired.set(notice);
        Signal::SIGTERM
    };
    futures_util::stream::once(act)
}

/// Follows the notices until one is due: returns it at its act time.
async fn act_time(
    mut notices: Notices,
    file: Option<&NoticeFile>,
    metrics: &AgentMetrics,
) -> Notice {
    let mut shown: Option<Notice> = None;
    loop {
        let current = notices.notices.borrow_and_update().clone();
        let act_at = current
            .as_ref()
            .filter(|n| n.is_departure())
            .and_then(|n| n.act_at(notices.lead, SystemTime::now()));
        if current != shown {
            if let Some(notice) = &current {
                metrics.notice(notice);
                let left = act_at.and_then(|t| t.duration_since(SystemTime::now()).ok());
                tracing::warn!(%notice, acts_in_s = ?left.map(|d| d.as_secs()), lead_s = notices.lead.as_secs(), "a notice from the cloud for this host");
            } else {
                tracing::info!("the cloud's notice for this host was withdrawn: staying");
            }
            if let Some(file) = file {
                file.show(current.as_ref().map(|n| (n, act_at)));
            }
            shown = current.clone();
        }
        match (current, act_at) {
            (Some(notice), Some(at)) => {
                let wait = at.duration_since(SystemTime::now()).unwrap_or_default();
                tokio::select! {
                    () = tokio::time::sleep(wait) => return notice,
                    changed = notices.notices.changed() => if changed.is_err() {
                        // The watcher is gone: the notice stands, and is acted on.
                        tokio::time::sleep(wait).await;
                        return notice;
                    },
                }
            }
            _ => {
                if notices.notices.changed().await.is_err() {
                    // No watcher, no notice to come.
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use cloud_notices::{Cloud, NoticeKind};
    use futures_util::StreamExt;

    use super::*;

    fn notice(kind: NoticeKind, in_s: u64) -> Notice {
        Notice {
            cloud: Cloud::Azure,
            kind,
            deadline: (kind != NoticeKind::Rebalance)
                .then(|| SystemTime::now() + Duration::from_secs(in_s)),
            source: "scheduledevents",
            event_id: Some("E".into()),
            detail: "Preempt".into(),
        }
    }

    /// Polls the file until `shown` holds for its contents (`None`: no file), for at most
    /// 10 s.
    async fn file_shows(file: &NoticeFile, shown: impl Fn(Option<serde_json::Value>) -> bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let text = std::fs::read_to_string(file.path()).ok();
                if shown(text.map(|t| serde_json::from_str(&t).expect("whole JSON"))) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the file shows it within 10 s");
    }

    #[tokio::test]
    async fn a_departure_fires_at_its_deadline_less_the_lead_and_a_withdrawal_cancels_it() {
        let (cloud, receiver) = watch::channel(None);
        let file = Arc::new(NoticeFile::create().unwrap());
        let fired = Fired::default();
        let stop = departure(
            Notices::new(receiver, Duration::from_secs(3_600)),
            Some(Arc::clone(&file)),
            AgentMetrics::default(),
            Arc::clone(&fired),
        );
        // The agent polls its stop all the while; here a task does.
        let stopped = tokio::spawn(async move {
            let mut stop = Box::pin(stop);
            (stop.next().await, stop.next().await)
        });
        // A rebalance: shown, never acted on.
        cloud.send_replace(Some(notice(NoticeKind::Rebalance, 0)));
        file_shows(&file, |shown| {
            shown.is_some_and(|s| s["kind"] == "rebalance" && s["act_at"].is_null())
        })
        .await;
        // Withdrawn: the file goes, and nothing fired.
        cloud.send_replace(None);
        file_shows(&file, |shown| shown.is_none()).await;
        assert!(!stopped.is_finished() && fired.get().is_none());
        // A preemption an hour ahead with an hour's lead: now, once.
        cloud.send_replace(Some(notice(NoticeKind::Preemption, 3_600)));
        let signals = tokio::time::timeout(Duration::from_secs(10), stopped).await;
        let signals = signals.expect("at once").expect("the task ran");
        assert_eq!(signals, (Some(Signal::SIGTERM), None));
        assert_eq!(fired.get().map(|n| n.kind), Some(NoticeKind::Preemption));
        file_shows(&file, |shown| {
            shown.is_some_and(|s| {
                s["kind"] == "preemption" && s["act_at"].is_f64() && s["deadline"].is_f64()
            })
        })
        .await;
    }

    #[tokio::test]
    async fn a_departure_waits_for_its_time() {
        let (cloud, receiver) = watch::channel(None);
        let mut stop = Box::pin(departure(
            Notices::new(receiver, Duration::from_secs(60)),
            None,
            AgentMetrics::default(),
            Fired::default(),
        ));
        cloud.send_replace(Some(notice(NoticeKind::Termination, 900)));
        // Polled for a while: 840 s to go, so nothing comes.
        let early = tokio::time::timeout(Duration::from_millis(300), stop.next()).await;
        assert!(early.is_err(), "840 s to go");
    }
}
